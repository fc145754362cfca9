-- SPDX-License-Identifier: BSD-3-Clause
--
-- Wireshark dissector for the VIA-DPDK wire format, version 2
-- (docs/wire-format.md): Ethernet II frames of EtherType 0x88B5 with a
-- 48-byte VIA header, then a payload: the connection payload of CONN_REQ
-- and CONN_ACCEPT, the RDMA extension of RDMA_WRITE and RDMA_READ_REQ,
-- message data. The handshake's imm is shown as what it is: the cookie of
-- CONN_REQ and CONN_COOKIE, the reason of CONN_REJECT.
--
--   wireshark -X lua_script:via.lua capture.pcapng
--   tshark -X lua_script:via.lua -r capture.pcapng -T fields -e via.opcode ...
-- or copy (link) it into ~/.local/lib/wireshark/plugins/.
--
-- Both CRCs are checked (CRC-32C, initial value 0xFFFFFFFF, no final XOR:
-- DPDK's rte_hash_crc); a mismatch is an expert error. Frames that stay in
-- viad's memory (to the NIC's own address) carry both CRCs as 0: they are
-- shown as not computed, not as bad. A numbered frame (seq) seen again in
-- the same direction on the same connection is flagged: a retransmission
-- (go-back-N, wire-format.md 11.3) or a duplicate.

local via = Proto("via", "VIA-DPDK (Virtual Interface Architecture over Ethernet)")

local ETHERTYPE = 0x88B5
local VERSION = 2
local HDR_LEN = 48
local CONN_LEN = 144
local RDMA_EXT = 16

local op = {
	CONN_REQ = 1, CONN_ACCEPT = 2, CONN_REJECT = 3, CONN_NOMATCH = 4, DISC = 5,
	RESET = 6, SEND = 7, ACK = 8, NAK = 9, RDMA_WRITE = 10, RDMA_READ_REQ = 11,
	RDMA_READ_RESP = 12, CONN_ACK = 13, CONN_COOKIE = 14,
}
local op_names = {}
for name, value in pairs(op) do op_names[value] = name end

-- frames that take a place in the connection's sequence (wire-format.md 11.2)
local numbered = { [op.SEND] = true, [op.RDMA_WRITE] = true, [op.RDMA_READ_REQ] = true,
		   [op.RDMA_READ_RESP] = true }

-- CONN_REJECT's imm (wire-format.md 7.4)
local reject_reasons = { [0] = "consumer", [1] = "reliability level", [2] = "MTU",
			 [3] = "QoS", [4] = "abandoned" }
local levels = { [1] = "Unreliable Delivery", [2] = "Reliable Delivery", [4] = "Reliable Reception" }
local crc_status = { [0] = "Bad", [1] = "Good", [2] = "Unverified" }
local status_ops = { [0] = "Send", [1] = "Receive", [2] = "RDMA Write",
		     [3] = "Remote RDMA Write", [4] = "RDMA Read" }

local f = {
	version = ProtoField.uint8("via.version", "Version"),
	opcode = ProtoField.uint8("via.opcode", "Opcode", base.DEC, op_names),
	flags = ProtoField.uint16("via.flags", "Flags", base.HEX),
	flag_imm = ProtoField.bool("via.flags.imm", "Immediate data", 16, nil, 0x0001),
	flag_peer = ProtoField.bool("via.flags.peer", "Peer connection request", 16, nil, 0x0002),
	flag_probe = ProtoField.bool("via.flags.probe", "Probe (asks for an ACK back)", 16, nil, 0x0004),
	flag_placed = ProtoField.bool("via.flags.placed", "Placed (imm: first frame not placed)", 16,
				      nil, 0x0008),
	flag_reply = ProtoField.bool("via.flags.reply", "Reply to a probe", 16, nil, 0x0010),
	flag_intact = ProtoField.bool("via.flags.intact", "Port cannot alter frames (data to it may go unsummed)",
				      16, nil, 0x0020),
	flag_unsummed = ProtoField.bool("via.flags.unsummed", "Payload CRC not computed", 16, nil,
					0x0040),
	dst_vi = ProtoField.uint32("via.dst_vi", "Destination VI"),
	src_vi = ProtoField.uint32("via.src_vi", "Source VI"),
	conn_id = ProtoField.uint32("via.conn_id", "Connection id", base.HEX),
	seq = ProtoField.uint32("via.seq", "Sequence number"),
	msg_id = ProtoField.uint32("via.msg_id", "Message id"),
	msg_len = ProtoField.uint32("via.msg_len", "Message length"),
	offset = ProtoField.uint32("via.offset", "Offset"),
	imm = ProtoField.uint32("via.imm", "Immediate data", base.HEX),
	cookie = ProtoField.uint32("via.cookie", "Cookie", base.HEX),
	reject_reason = ProtoField.uint32("via.reject_reason", "Reject reason", base.DEC,
					  reject_reasons),
	nak_status = ProtoField.uint32("via.nak.status", "Refusal status", base.HEX),
	nak_error = ProtoField.uint32("via.nak.error", "Error bits", base.HEX, nil, 0x000001FE),
	nak_op = ProtoField.uint32("via.nak.op", "Operation", base.DEC, status_ops, 0x00070000),
	payload_len = ProtoField.uint16("via.payload_len", "Payload length"),
	reserved = ProtoField.uint16("via.reserved", "Reserved", base.HEX),
	payload_crc = ProtoField.uint32("via.payload_crc", "Payload CRC", base.HEX),
	payload_crc_status = ProtoField.uint8("via.payload_crc.status", "Payload CRC status",
					      base.DEC, crc_status),
	hdr_crc = ProtoField.uint32("via.hdr_crc", "Header CRC", base.HEX),
	hdr_crc_status = ProtoField.uint8("via.hdr_crc.status", "Header CRC status", base.DEC,
					  crc_status),
	repeated_of = ProtoField.framenum("via.repeated_of", "Sequence number first seen in"),
	-- bytes the capture kept of the frame's VIA part (viactl capture --snaplen)
	truncated = ProtoField.uint32("via.truncated", "Captured in part: bytes kept"),
	rdma_va = ProtoField.uint64("via.rdma.va", "Remote address", base.HEX),
	rdma_handle = ProtoField.uint32("via.rdma.handle", "Remote memory handle", base.HEX),
	rdma_reserved = ProtoField.uint32("via.rdma.reserved", "RDMA reserved", base.HEX),
	conn_reliability = ProtoField.uint16("via.conn.reliability", "Reliability level", base.HEX,
					     levels),
	conn_rdma_write = ProtoField.uint8("via.conn.rdma_write", "RDMA Write enabled"),
	conn_rdma_read = ProtoField.uint8("via.conn.rdma_read", "RDMA Read enabled"),
	conn_max_transfer = ProtoField.uint32("via.conn.max_transfer", "Max transfer size"),
	conn_qos = ProtoField.uint32("via.conn.qos", "QoS"),
	conn_dst_disc_len = ProtoField.uint8("via.conn.dst_disc_len", "Destination discriminator length"),
	conn_src_disc_len = ProtoField.uint8("via.conn.src_disc_len", "Source discriminator length"),
	conn_frame_payload = ProtoField.uint16("via.conn.frame_payload", "Frame payload"),
	conn_dst_disc = ProtoField.bytes("via.conn.dst_disc", "Destination discriminator"),
	conn_src_disc = ProtoField.bytes("via.conn.src_disc", "Source discriminator"),
	data = ProtoField.bytes("via.data", "Data"),
	data_len = ProtoField.uint32("via.data_len", "Data length"),
}
local field_list = {}
for _, field in pairs(f) do field_list[#field_list + 1] = field end
via.fields = field_list

local ex = {
	hdr_crc_bad = ProtoExpert.new("via.hdr_crc.bad", "Bad header CRC",
				      expert.group.CHECKSUM, expert.severity.ERROR),
	payload_crc_bad = ProtoExpert.new("via.payload_crc.bad", "Bad payload CRC",
					  expert.group.CHECKSUM, expert.severity.ERROR),
	in_memory = ProtoExpert.new("via.crc.in_memory",
				    "CRCs not computed: a frame that stays in viad's memory",
				    expert.group.CHECKSUM, expert.severity.CHAT),
	malformed = ProtoExpert.new("via.malformed", "Malformed VIA frame",
				    expert.group.MALFORMED, expert.severity.ERROR),
	truncated = ProtoExpert.new("via.truncated.snaplen",
				    "Frame cut short by the capture's snaplen: the rest was not kept",
				    expert.group.UNDECODED, expert.severity.NOTE),
	repeated = ProtoExpert.new("via.repeated", "Sequence number seen before: retransmission or duplicate",
				   expert.group.SEQUENCE, expert.severity.NOTE),
	nak = ProtoExpert.new("via.nak", "The receiver refused a frame: the connection breaks",
			      expert.group.RESPONSE_CODE, expert.severity.WARN),
	reset = ProtoExpert.new("via.reset", "No such connection at the sender",
				expert.group.SEQUENCE, expert.severity.WARN),
}
via.experts = { ex.hdr_crc_bad, ex.payload_crc_bad, ex.in_memory, ex.malformed, ex.truncated,
	ex.repeated,
		ex.nak, ex.reset }

-- CRC-32C, reflected polynomial 0x82F63B78, one table lookup per byte
local crc_table = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if bit32.band(c, 1) ~= 0 then
			c = bit32.bxor(bit32.rshift(c, 1), 0x82F63B78)
		else
			c = bit32.rshift(c, 1)
		end
	end
	crc_table[i] = c
end

-- rte_hash_crc(data, len, 0xffffffff): initial value all ones, no final XOR
local function via_crc(s)
	local crc = 0xFFFFFFFF
	for i = 1, #s do
		local idx = bit32.band(bit32.bxor(crc, s:byte(i)), 0xFF)
		crc = bit32.bxor(bit32.rshift(crc, 8), crc_table[idx])
	end
	return crc
end

-- first frame of each (direction, sender, connection, VI, seq, opcode)
local first_seen = {}

function via.init()
	first_seen = {}
end

local function flags_text(flags)
	local t = {}
	if bit32.band(flags, 0x0001) ~= 0 then t[#t + 1] = "IMM" end
	if bit32.band(flags, 0x0002) ~= 0 then t[#t + 1] = "PEER" end
	if bit32.band(flags, 0x0004) ~= 0 then t[#t + 1] = "PROBE" end
	return table.concat(t, ",")
end

-- A discriminator as text when it is printable.
local function disc_text(s)
	if s:match("^[%g ]*$") then return '"' .. s .. '"' end
	return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

local function dissect_conn(tvb, tree, off)
	local t = tree:add(via, tvb(off, CONN_LEN), "Connection payload")
	t:add(f.conn_reliability, tvb(off, 2))
	t:add(f.conn_rdma_write, tvb(off + 2, 1))
	t:add(f.conn_rdma_read, tvb(off + 3, 1))
	t:add(f.conn_max_transfer, tvb(off + 4, 4))
	t:add(f.conn_qos, tvb(off + 8, 4))
	t:add(f.conn_dst_disc_len, tvb(off + 12, 1))
	t:add(f.conn_src_disc_len, tvb(off + 13, 1))
	t:add(f.conn_frame_payload, tvb(off + 14, 2))
	local dlen = math.min(tvb(off + 12, 1):uint(), 64)
	local slen = math.min(tvb(off + 13, 1):uint(), 64)
	local text = ""
	if dlen > 0 then
		t:add(f.conn_dst_disc, tvb(off + 16, dlen))
		text = text .. " to " .. disc_text(tvb(off + 16, dlen):raw())
	end
	if slen > 0 then
		t:add(f.conn_src_disc, tvb(off + 80, slen))
		text = text .. " from " .. disc_text(tvb(off + 80, slen):raw())
	end
	local level = levels[tvb(off, 2):uint()] or "?"
	return text .. " (" .. level .. ")"
end

function via.dissector(tvb, pinfo, tree)
	if tvb:reported_len() < HDR_LEN then
		return 0
	end
	pinfo.cols.protocol = "VIA"
	if tvb:len() < HDR_LEN then
		-- a snaplen shorter than the header: what was kept, and why not more
		local t = tree:add(via, tvb(), "VIA-DPDK, header cut short")
		t:add(f.truncated, tvb:len()):set_generated()
		t:add_proto_expert_info(ex.truncated, string.format(
			"Frame cut short by the capture's snaplen: %d of the header's %d bytes kept",
			tvb:len(), HDR_LEN))
		pinfo.cols.info = "VIA (header cut short by the snaplen)"
		return tvb:len()
	end
	local h = tvb(0, HDR_LEN)
	local t = tree:add(via, tvb(), "VIA-DPDK")
	local version = tvb(0, 1):uint()
	local opcode = tvb(1, 1):uint()
	local flags = tvb(2, 2):uint()
	local plen = tvb(36, 2):uint()
	local name = op_names[opcode] or string.format("opcode %d", opcode)

	local vt = t:add(f.version, tvb(0, 1))
	t:add(f.opcode, tvb(1, 1))
	local ft = t:add(f.flags, tvb(2, 2))
	ft:add(f.flag_imm, tvb(2, 2))
	ft:add(f.flag_peer, tvb(2, 2))
	ft:add(f.flag_probe, tvb(2, 2))
	ft:add(f.flag_placed, tvb(2, 2))
	ft:add(f.flag_reply, tvb(2, 2))
	ft:add(f.flag_intact, tvb(2, 2))
	ft:add(f.flag_unsummed, tvb(2, 2))
	t:add(f.dst_vi, tvb(4, 4))
	t:add(f.src_vi, tvb(8, 4))
	t:add(f.conn_id, tvb(12, 4))
	t:add(f.seq, tvb(16, 4))
	t:add(f.msg_id, tvb(20, 4))
	t:add(f.msg_len, tvb(24, 4))
	t:add(f.offset, tvb(28, 4))
	if opcode == op.NAK then
		local st = t:add(f.nak_status, tvb(32, 4))
		st:add(f.nak_error, tvb(32, 4))
		st:add(f.nak_op, tvb(32, 4))
		st:add_proto_expert_info(ex.nak)
	elseif opcode == op.CONN_REQ or opcode == op.CONN_COOKIE then
		t:add(f.cookie, tvb(32, 4))
	elseif opcode == op.CONN_REJECT then
		t:add(f.reject_reason, tvb(32, 4))
	else
		t:add(f.imm, tvb(32, 4))
	end
	local pt = t:add(f.payload_len, tvb(36, 2))
	local rt = t:add(f.reserved, tvb(38, 2))
	t:add(f.payload_crc, tvb(40, 4))
	t:add(f.hdr_crc, tvb(44, 4))

	-- the checks of wire-format.md section 3, in its order
	if version ~= VERSION then
		vt:add_proto_expert_info(ex.malformed, "Version " .. version .. ", not " .. VERSION)
	end
	if op_names[opcode] == nil then
		t:add_proto_expert_info(ex.malformed, "Unknown opcode " .. opcode)
	end
	if tvb(38, 2):uint() ~= 0 then
		rt:add_proto_expert_info(ex.malformed, "Reserved is not 0")
	end
	-- a payload longer than the frame is malformed; one longer than what
	-- the capture kept (its snaplen) is only cut short
	local avail = tvb:len() - HDR_LEN
	if plen > tvb:reported_len() - HDR_LEN then
		pt:add_proto_expert_info(ex.malformed, "Payload length beyond the frame")
	elseif plen > avail then
		t:add(f.truncated, tvb:len()):set_generated()
		pt:add_proto_expert_info(ex.truncated, string.format(
			"Frame cut short by the capture's snaplen: %d of %d payload bytes kept",
			avail, plen))
	end

	local hcrc = tvb(44, 4):uint()
	local pcrc = tvb(40, 4):uint()
	if hcrc == 0 and pcrc == 0 then
		t:add(f.hdr_crc_status, 2):set_generated()
		t:add(f.payload_crc_status, 2):set_generated()
		t:add_proto_expert_info(ex.in_memory)
	else
		local hdr = h:raw(0, 44) .. "\0\0\0\0"
		local want = via_crc(hdr)
		local good = want == hcrc
		t:add(f.hdr_crc_status, good and 1 or 0):set_generated()
		if not good then
			t:add_proto_expert_info(ex.hdr_crc_bad,
				string.format("Bad header CRC 0x%08x: the header gives 0x%08x", hcrc, want))
		end
		if bit32.band(tvb(2, 2):uint(), 0x0040) ~= 0 then
			-- UNSUMMED: sent between two ports that cannot alter frames
			t:add(f.payload_crc_status, 2):set_generated()
		elseif plen <= avail then
			local pwant = via_crc(plen > 0 and tvb(HDR_LEN, plen):raw() or "")
			local pgood = pwant == pcrc
			t:add(f.payload_crc_status, pgood and 1 or 0):set_generated()
			if not pgood then
				t:add_proto_expert_info(ex.payload_crc_bad,
					string.format("Bad payload CRC 0x%08x: the payload gives 0x%08x",
						      pcrc, pwant))
			end
		else
			t:add(f.payload_crc_status, 2):set_generated()
		end
	end

	-- the payload, as the opcode has it
	local info = name
	local conn = tvb(12, 4):uint()
	local dst, src = tvb(4, 4):uint(), tvb(8, 4):uint()
	local seq, msg = tvb(16, 4):uint(), tvb(20, 4):uint()
	local poff, dlen = HDR_LEN, math.min(plen, avail)
	if (opcode == op.CONN_REQ or opcode == op.CONN_ACCEPT) and dlen >= CONN_LEN then
		info = info .. dissect_conn(tvb, t, HDR_LEN)
		dlen = 0
	elseif (opcode == op.RDMA_WRITE or opcode == op.RDMA_READ_REQ) and dlen >= RDMA_EXT then
		local rt2 = t:add(via, tvb(HDR_LEN, RDMA_EXT), "RDMA extension")
		rt2:add(f.rdma_va, tvb(HDR_LEN, 8))
		rt2:add(f.rdma_handle, tvb(HDR_LEN + 8, 4))
		rt2:add(f.rdma_reserved, tvb(HDR_LEN + 12, 4))
		info = info .. string.format(" va=0x%s handle=%d", tvb(HDR_LEN, 8):uint64():tohex(),
					     tvb(HDR_LEN + 8, 4):uint())
		poff, dlen = HDR_LEN + RDMA_EXT, dlen - RDMA_EXT
	end
	if dlen > 0 then
		t:add(f.data_len, dlen):set_generated()
		t:add(f.data, tvb(poff, dlen))
	end

	info = info .. string.format(" conn=0x%08x %d→%d", conn, src, dst)
	if numbered[opcode] then
		info = info .. string.format(" seq=%d msg=%d off=%d/%d", seq, msg, tvb(28, 4):uint(),
					     tvb(24, 4):uint())
		-- the same frame again, in the same direction: a resend or a duplicate
		local key = table.concat({ tostring(pinfo.p2p_dir), tostring(pinfo.src), conn, src,
					   opcode, seq }, "/")
		local first = first_seen[key]
		if first == nil or pinfo.number < first then
			first_seen[key] = pinfo.number
		elseif first < pinfo.number then
			local r = t:add(f.repeated_of, first)
			r:set_generated()
			r:add_proto_expert_info(ex.repeated)
			info = info .. " [again]"
		end
	elseif opcode == op.ACK or opcode == op.NAK then
		info = info .. string.format(" seq=%d", seq)
	end
	if opcode == op.NAK then
		info = info .. string.format(" status=0x%08x", tvb(32, 4):uint())
	elseif (opcode == op.CONN_REQ or opcode == op.CONN_COOKIE) and tvb(32, 4):uint() ~= 0 then
		info = info .. string.format(" cookie=0x%08x", tvb(32, 4):uint())
	elseif opcode == op.CONN_REJECT then
		info = info .. " reason=" .. (reject_reasons[tvb(32, 4):uint()] or "?")
	elseif bit32.band(flags, 0x0001) ~= 0 then
		info = info .. string.format(" imm=0x%08x", tvb(32, 4):uint())
	end
	if opcode == op.RESET then
		t:add_proto_expert_info(ex.reset)
	end
	if flags ~= 0 and opcode ~= op.NAK then
		info = info .. " [" .. flags_text(flags) .. "]"
	end
	pinfo.cols.info = info
	return tvb:len()
end

DissectorTable.get("ethertype"):add(ETHERTYPE, via)
