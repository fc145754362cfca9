#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tests/perf/dp_params.py: the parameters of every function of viad's data
path (daemon/dp/*.c and the inline functions of daemon/dp/dp.h), counted;
prints those with more than the limit (-m, default 5), most first, and the
distribution. Exit 1 if any has more (a check for CI), 0 otherwise.

    dp_params.py [-m MAX] [-a] [DIR]   (-a: list every function)
"""
import argparse, os, re, sys

ap = argparse.ArgumentParser()
ap.add_argument('-m', type=int, default=5)
ap.add_argument('-a', action='store_true')
ap.add_argument('dir', nargs='?',
                default=os.path.join(os.path.dirname(__file__), '..', '..', 'daemon', 'dp'))
o = ap.parse_args()

# a definition: the name at the start of a line (DPDK style) or after the
# return type on the same line, its parameters, then '{' on the next line
DEF = re.compile(r'^(?:[\w \*]+?\b)?(\w+)\(([^;{}]*?)\)\s*\n\{', re.M)
funcs = []
for f in sorted(os.listdir(o.dir)):
    if not (f.endswith('.c') or f.endswith('.h')):
        continue
    text = open(os.path.join(o.dir, f)).read()
    text = re.sub(r'/\*.*?\*/', lambda m: ' ' * len(m.group(0)), text, flags=re.S)
    for m in DEF.finditer(text):
        name, params = m.group(1), m.group(2).strip()
        if name in ('if', 'while', 'for', 'switch', 'return'):
            continue
        depth, n = 0, 0 if params in ('', 'void') else 1
        for c in params:
            depth += c == '('
            depth -= c == ')'
            n += c == ',' and depth == 0
        funcs.append((n, f, name))
funcs.sort(key=lambda x: (-x[0], x[1], x[2]))
over = [x for x in funcs if x[0] > o.m]
for n, f, name in (funcs if o.a else over):
    print(f'{n:3d}  {f}:{name}')
hist = {}
for n, _, _ in funcs:
    hist[n] = hist.get(n, 0) + 1
print(f'{len(funcs)} functions in {o.dir}; by parameters: ' +
      ', '.join(f'{k}: {hist[k]}' for k in sorted(hist)) +
      f'; {len(over)} over {o.m}')
sys.exit(1 if over else 0)
