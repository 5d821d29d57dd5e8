#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (corpus/fuzz_NAME/seed-*).

Seeds come from the test data: the MPA frames and byte streams cut from
real siw traffic (test/data/*.bin, see test/data/extract-siw-fixtures.py)
and the siw captures themselves (test/data/captures/), plus inputs built
here that walk each target through what it checks: every MPA option in
both roles, FPDUs with every marker/CRC combination, each RDMAP message
type against registered memory, whole connections made both ways.

Each input is laid out the way its target reads it (fuzz/fuzz_NAME.c:
fields big-endian, in the order the target takes them).  Usage, from
anywhere:

    fuzz/make-seeds.py [PCAP_RELINK]

PCAP_RELINK is test/pcap_relink from a build; with it (and editcap) the
capture seeds come in every link layer and as pcapng too.
"""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "test", "data")
CORPUS = os.path.join(HERE, "corpus")


def u8(v):
    return struct.pack(">B", v & 0xff)


def u16(v):
    return struct.pack(">H", v & 0xffff)


def u32(v):
    return struct.pack(">I", v & 0xffffffff)


def u64(v):
    return struct.pack(">Q", v & 0xffffffffffffffff)


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def fixture(name):
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


def fixtures():
    """(name, i2r, r2i) of every fixture pair in siw-fixtures.txt."""
    out = []
    with open(os.path.join(DATA, "siw-fixtures.txt")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name = line.split()[0]
            out.append((name, fixture(name + ".i2r.bin"),
                        fixture(name + ".r2i.bin")))
    return out


def frame_len(b):
    """Length of the MPA Request/Reply that starts b, or 0."""
    if len(b) < 20 or not b.startswith(b"MPA ID "):
        return 0
    return 20 + struct.unpack(">H", b[18:20])[0]


# ---- MPA policies (read_policy in the targets) ---------------------------

OFF, FOLLOW, ON = 0, 1, 2
SEND, WRITE, READ = 1, 2, 4


def policy_octet(rev, crc, markers, rtr=0):
    """The octet whose fields decode as asked: rev2 bit 0, crc (b>>1)%3,
    markers (b>>3)%3, RTR offer (b>>5)&7."""
    for b in range(256):
        if ((b & 1) == (rev == 2) and (b >> 1) % 3 == crc and
                (b >> 3) % 3 == markers and (b >> 5) & 7 == rtr):
            return b
    raise ValueError("no octet for %r" % ((rev, crc, markers, rtr),))


def mpa_policy(rev=2, crc=FOLLOW, markers=FOLLOW, ird=16, ord_=16, rtr=0,
               accept=7):
    """fuzz_mpa_frame's policy: octet, IRD, ORD (16 bits), RTR accepted."""
    return (u8(policy_octet(rev, crc, markers, rtr)) + u16(ird) + u16(ord_) +
            u8(accept))


def mpa_frame_seeds():
    n = 0
    policies = [mpa_policy(), mpa_policy(1, OFF, OFF),
                mpa_policy(2, ON, ON, 1, 1, accept=WRITE),
                mpa_policy(2, FOLLOW, OFF, 0, 0, accept=READ)]
    for name, i2r, r2i in fixtures():
        req, rep = i2r[:frame_len(i2r)], r2i[:frame_len(r2i)]
        for k, pol in enumerate(policies):
            if req:
                write("fuzz_mpa_frame", "%s-req-%d" % (name, k),
                      u8(0) + pol + u16(512) + req)
            if rep:
                write("fuzz_mpa_frame", "%s-rep-%d" % (name, k),
                      u8(1) + pol + u16(512) + rep)
        # the frame cut short and followed by more than it announces
        if req:
            write("fuzz_mpa_frame", name + "-req-short",
                  u8(0) + policies[0] + u16(512) + req[:-1])
            write("fuzz_mpa_frame", name + "-req-more",
                  u8(0) + policies[0] + u16(512) + i2r[:frame_len(i2r) + 8])
    # both roles, every option against every other
    for rev_i in (1, 2):
        for crc_i in (OFF, FOLLOW, ON):
            for mk_i in (OFF, FOLLOW, ON):
                for crc_r, mk_r, rtr, acc in ((FOLLOW, FOLLOW, 0, 7),
                                              (ON, OFF, SEND | WRITE, 1),
                                              (OFF, ON, READ, 4),
                                              (FOLLOW, OFF, 7, 2)):
                    pd = b"private data %d" % n
                    write("fuzz_mpa_frame", "handshake-%02d" % n,
                          u8(2) + mpa_policy(rev_i, crc_i, mk_i, 4, 2, rtr) +
                          mpa_policy(2, crc_r, mk_r, 2, 4, accept=acc) +
                          u16(len(pd)) + pd)
                    n += 1
    # IRD 0 against a Read RTR; revision 1 against peer-to-peer
    write("fuzz_mpa_frame", "handshake-read-no-ird",
          u8(2) + mpa_policy(2, FOLLOW, FOLLOW, 1, 1, READ) +
          mpa_policy(2, FOLLOW, FOLLOW, 0, 1, accept=READ) + u16(0))
    write("fuzz_mpa_frame", "handshake-rev1-p2p",
          u8(2) + mpa_policy(2, FOLLOW, FOLLOW, 1, 1, WRITE) +
          mpa_policy(1, FOLLOW, FOLLOW, 1, 1) + u16(0))


# ---- FPDU de-framer ------------------------------------------------------

MARKERS, CRC, FRAMED, WINDOW = 1, 2, 4, 8


def flags_of(frame):
    return frame[16] if len(frame) > 16 else 0


def fpdu_rx_seeds():
    for name, i2r, r2i in fixtures():
        lreq, lrep = frame_len(i2r), frame_len(r2i)
        if not lreq or not lrep:
            continue
        freq, frep = flags_of(i2r), flags_of(r2i)
        crc = CRC if (freq | frep) & 0x40 else 0
        # M in a frame: its sender wants markers in what it receives
        for d, stream, mk in (("i2r", i2r[lreq:], frep & 0x80),
                              ("r2i", r2i[lrep:], freq & 0x80)):
            if not stream:
                continue
            cfg = crc | (MARKERS if mk else 0)
            write("fuzz_fpdu_rx", "%s-%s" % (name, d),
                  u8(cfg) + u16(0) + u64(0x1234) + stream)
            write("fuzz_fpdu_rx", "%s-%s-window" % (name, d),
                  u8(cfg | WINDOW) + u16(0) + u64(7) + stream)
    sizes = [0, 1, 2, 3, 4, 17, 506, 600, 1448, 4096]
    for cfg in range(4):
        body = b""
        for k, n in enumerate(sizes):
            body += u16(n) + u8(k * 37) + bytes((k + i) & 0xff
                                                for i in range(n))
        for extra, tag in ((0, ""), (WINDOW, "-window")):
            write("fuzz_fpdu_rx", "framed-%d%s" % (cfg, tag),
                  u8(cfg | FRAMED | extra) + u16(0) + u64(cfg + 3) +
                  u8(0) + body)
        # one octet flipped; a receive limit below the longest ULPDU
        write("fuzz_fpdu_rx", "framed-%d-corrupt" % cfg,
              u8(cfg | FRAMED) + u16(0) + u64(1) + u8(1) + u32(700) +
              u8(0x10) + body)
        write("fuzz_fpdu_rx", "framed-%d-limit" % cfg,
              u8(cfg | FRAMED) + u16(1000) + u64(2) + u8(0) + body)
        big = u16(65000) + u8(0) + bytes(i & 0xff for i in range(65000))
        write("fuzz_fpdu_rx", "framed-%d-large" % cfg,
              u8(cfg | FRAMED | WINDOW) + u16(0) + u64(9) + u8(0) + big)


# ---- DDP/RDMAP segments (the peer's ULPDUs) ------------------------------

OP_WRITE, OP_READ_REQ, OP_READ_RESP, OP_SEND = 0, 1, 2, 3
OP_SEND_INV, OP_SEND_SE, OP_SEND_SE_INV, OP_TERMINATE = 4, 5, 6, 7
FIX_KEYS, FIX_TO, FIX_SEQ = 0x08, 0x10, 0x20
FIX_ALL = FIX_KEYS | FIX_TO | FIX_SEQ


def rdmap_ctrl(op):
    return 0x40 | op


def untagged(op, qn, payload=b"", last=True, rsvd2=0, msn=1, mo=0):
    return (u8((0x40 if last else 0) | 1) + u8(rdmap_ctrl(op)) + u32(rsvd2) +
            u32(qn) + u32(msn) + u32(mo) + payload)


def tagged(op, stag, to, payload=b"", last=True):
    return (u8(0x80 | (0x40 if last else 0) | 1) + u8(rdmap_ctrl(op)) +
            u32(stag) + u64(to) + payload)


def read_request(sink_stag, sink_to, size, src_stag, src_to):
    return untagged(OP_READ_REQ, 1, u32(sink_stag) + u64(sink_to) +
                    u32(size) + u32(src_stag) + u64(src_to))


def terminate(layer, etype, ecode, hdrct=0, rest=b""):
    return untagged(OP_TERMINATE, 2, u8(layer << 4 | etype) + u8(ecode) +
                    u8(hdrct) + u8(0) + rest)


def stag(region):
    """The STag that names the region-th region (1-based) for the peer."""
    return region << 8


def pattern(n, k=0):
    return bytes((i * 7 + k) & 0xff for i in range(n))


# chunk ops, as both targets number them
R_ULPDU, R_RAW, R_DRAIN, R_POST, R_DEREG, R_CORRUPT = 0, 1, 2, 3, 4, 5
C_ULPDU, C_RAW, C_POST, C_DEREG, C_CORRUPT, C_QP_ERR, C_DISC = range(7)


def ulpdu_chunk(seg, fix=FIX_ALL, op=0):
    return u8(op | fix) + u16(len(seg)) + seg


# ---- fuzz_rdmap_rx -----------------------------------------------------------

# regions: (how, len); how = access | 8 other PD | 0x10 at slot end |
# va mode << 5 | 0x80 invalidated.  Access: 1 local write, 2 remote write,
# 4 remote read.
RDMAP_REGIONS = [(7 | 1 << 5, 4096),		# 1: everything, va 0x10000
                 (4 | 0x10 | 1 << 5, 4096),	# 2: remote read, at the end
                 (1 | 1 << 5, 8192),		# 3: local write: receives, sinks
                 (2 | 8 | 1 << 5, 512),		# 4: remote write, other PD
                 (6 | 2 << 5, 100),		# 5: ends at the top of TO space
                 (2 | 0x80 | 1 << 5, 256)]	# 6: invalidated


def rdmap_regions(regions=RDMAP_REGIONS):
    out = u8(len(regions) - 1)
    for how, n in regions:
        out += u8(how) + u16(n)
    for how, _ in regions:
        if how & 0x80:
            out += u8(0)  # invalidated, kept registered
    return out


def r_sge(region, off, n, key=0):
    return u8(region - 1) + u16(off) + u16(n) + u8(key)


def r_recv(sges):
    return u8(1) + u8(len(sges)) + b"".join(sges)


def r_send(op, flags, sges, inv=0, rkey=0, raddr=0):
    # post_one's octet (bit 0 clear: a send), then post_send's
    out = u8(0) + u8(op | flags << 2)
    if op != 3:
        out += u8(len(sges))
    return out + u32(inv) + u32(rkey) + u64(raddr) + b"".join(sges)


SIGNALED, SOLICITED, INLINE = 1, 2, 4
# the smallest MULPDU an engine takes (rdmap_wire.h): 18 + 4 + 2 + 18 + 28
RDMAP_MIN_MULPDU = 70


def rdmap_input(posts, chunks, initiator=False, crc=False, mk_tx=False,
                mk_rx=False, srq=False, rfirst=False, direct=False,
                eof=True, rtr=0, ird=4, ord_=4, mulpdu=1448, cut=3,
                inline=64, regions=RDMAP_REGIONS):
    b = ((1 if initiator else 0) | (2 if crc else 0) | (4 if mk_tx else 0) |
         (8 if mk_rx else 0) | (0x10 if srq else 0) |
         (0x20 if rfirst else 0) | (0x40 if direct else 0) |
         (0x80 if eof else 0))
    rtr_sel = {0: 0, SEND: 1, WRITE: 2, READ: 3}[rtr]
    return (u64(0xfeed) + u8(b) + u8(rtr_sel) + u8(15) + u8(15) +
            u8(inline) + u16(mulpdu - RDMAP_MIN_MULPDU) +
            u16(0xffff - RDMAP_MIN_MULPDU) + u8(ird) +
            u8(ord_) + u8(len(posts)) + u8(cut) + u64(0xc0ffee) +
            rdmap_regions(regions) + b"".join(posts) + b"".join(chunks))


def drain_all():
    return u8(R_DRAIN) + u8(0x80 | 63) + u16(0xffff)


def rdmap_rx_seeds():
    recvs = [r_recv([r_sge(3, 0, 2048)]),
             r_recv([r_sge(3, 2048, 1000), r_sge(3, 4096, 3000)])]
    sends = [
        ("send", [ulpdu_chunk(untagged(OP_SEND, 0, pattern(300)))]),
        ("send-se", [ulpdu_chunk(untagged(OP_SEND_SE, 0, pattern(2048)))]),
        ("send-two-segments",
         [ulpdu_chunk(untagged(OP_SEND, 0, pattern(1200), last=False)),
          ulpdu_chunk(untagged(OP_SEND, 0, pattern(800, 3)))]),
        ("send-inv", [ulpdu_chunk(untagged(OP_SEND_INV, 0, pattern(10),
                                           rsvd2=stag(1)))]),
        ("send-too-long", [ulpdu_chunk(untagged(OP_SEND, 0,
                                                pattern(3000)))]),
        ("write", [ulpdu_chunk(tagged(OP_WRITE, stag(1), 100,
                                      pattern(1000)))]),
        ("write-bounds", [ulpdu_chunk(tagged(OP_WRITE, stag(1), 4000,
                                             pattern(200)))]),
        ("write-other-pd", [ulpdu_chunk(tagged(OP_WRITE, stag(4), 0,
                                               pattern(10)))]),
        ("write-wrap", [ulpdu_chunk(tagged(OP_WRITE, stag(5), 90,
                                           pattern(20)))]),
        ("write-invalidated", [ulpdu_chunk(tagged(OP_WRITE, stag(6), 0,
                                                  pattern(10)))]),
        ("write-bad-key", [ulpdu_chunk(tagged(OP_WRITE, stag(1) | 0x5a, 0,
                                              pattern(10)), fix=FIX_TO)]),
        ("read-request", [ulpdu_chunk(read_request(0x7777, 0, 1024,
                                                   stag(2), 512)),
                          drain_all()]),
        ("read-request-no-access",
         [ulpdu_chunk(read_request(0x7777, 0, 16, stag(3), 0))]),
        ("terminate", [ulpdu_chunk(terminate(1, 1, 0, 0xc0,
                                             u16(14) + tagged(0, 5, 0)))]),
        ("terminate-siw", [ulpdu_chunk(terminate(2, 0, 2, 0x03))]),
        ("dereg-under-write",
         [ulpdu_chunk(tagged(OP_WRITE, stag(1), 0, pattern(1000),
                             last=False)),
          u8(R_DEREG) + u8(0),
          ulpdu_chunk(tagged(OP_WRITE, stag(1), 1000, pattern(10)))]),
        ("raw-garbage", [u8(R_RAW) + u16(40) + pattern(40)]),
        ("corrupt", [u8(R_CORRUPT) + u16(5) + u8(0x40),
                     ulpdu_chunk(untagged(OP_SEND, 0, pattern(64)))]),
    ]
    for k, (name, chunks) in enumerate(sends):
        for crc, mk in ((False, False), (True, False), (False, True),
                        (True, True)):
            tag = "%s-c%d-m%d" % (name, crc, mk)
            write("fuzz_rdmap_rx", tag,
                  rdmap_input(recvs, chunks, crc=crc, mk_rx=mk, mk_tx=mk,
                              direct=bool(k & 1), srq=(k % 5 == 0),
                              cut=(k + crc + 2 * mk) % 4))
    # our Read, answered; our Send, Write and Read going out
    read_sink = r_send(3, SIGNALED, [r_sge(3, 1024, 512)], rkey=0x99,
                       raddr=0x1000)
    for direct in (False, True):
        write("fuzz_rdmap_rx", "read-response-d%d" % direct,
              rdmap_input([read_sink], [
                  drain_all(),
                  ulpdu_chunk(tagged(OP_READ_RESP, stag(3), 1024,
                                     pattern(200), last=False)),
                  ulpdu_chunk(tagged(OP_READ_RESP, stag(3), 1224,
                                     pattern(312, 1)))],
                          initiator=True, direct=direct, cut=2))
    write("fuzz_rdmap_rx", "read-response-unexpected",
          rdmap_input([], [ulpdu_chunk(tagged(OP_READ_RESP, stag(3), 0,
                                              pattern(10)))]))
    write("fuzz_rdmap_rx", "read-response-mismatch",
          rdmap_input([read_sink], [drain_all(), ulpdu_chunk(
              tagged(OP_READ_RESP, stag(3), 1030, pattern(10)))],
              initiator=True))
    outgoing = [r_send(0, SIGNALED | SOLICITED, [r_sge(1, 0, 700),
                                                 r_sge(2, 0, 3000)]),
                r_send(2, SIGNALED, [r_sge(2, 100, 4000)], rkey=0x55,
                       raddr=0x10),
                r_send(0, INLINE, [r_sge(1, 5, 20)]),
                r_send(1, SIGNALED, [r_sge(1, 0, 8)], inv=0x1234),
                read_sink]
    for mk in (False, True):
        write("fuzz_rdmap_rx", "outgoing-m%d" % mk,
              rdmap_input(outgoing, [
                  u8(R_DRAIN) + u8(3) + u16(100) + u16(700),
                  drain_all(),
                  u8(R_POST) + r_send(0, SIGNALED, [r_sge(1, 0, 1)]),
                  drain_all()], initiator=True, mk_tx=mk, crc=True,
                  mulpdu=600))
    # the peer ends the stream naming our Read: it fails, the rest flushes
    echo = (u16(46) + untagged(OP_READ_REQ, 1)[:18] +
            u32(stag(3)) + u64(1024) + u32(512) + u32(0x99) + u64(0x1000))
    write("fuzz_rdmap_rx", "terminate-our-read",
          rdmap_input([read_sink], [drain_all(), ulpdu_chunk(
              terminate(0, 1, 0, 0xe0, echo))], initiator=True))
    write("fuzz_rdmap_rx", "read-ord-0",
          rdmap_input([read_sink], [drain_all()], initiator=True, ord_=0))
    write("fuzz_rdmap_rx", "ird-exceeded",
          rdmap_input(recvs, [ulpdu_chunk(read_request(1, 0, 8, stag(2), 0))
                              for _ in range(3)], ird=2))
    # RFC 6581 ready-to-receive, each type, right and wrong
    rtrs = {SEND: untagged(OP_SEND, 0),
            WRITE: tagged(OP_WRITE, 1, 0),
            READ: read_request(1, 0, 0, 1, 0)}
    for t, seg in rtrs.items():
        write("fuzz_rdmap_rx", "rtr-%d" % t,
              rdmap_input(recvs, [ulpdu_chunk(seg, fix=FIX_SEQ),
                                  ulpdu_chunk(untagged(OP_SEND, 0,
                                                       pattern(9))),
                                  drain_all()], rtr=t))
        write("fuzz_rdmap_rx", "rtr-%d-wrong" % t,
              rdmap_input(recvs, [ulpdu_chunk(untagged(OP_SEND, 0,
                                                       pattern(9)))], rtr=t))
        write("fuzz_rdmap_rx", "rtr-%d-initiator" % t,
              rdmap_input(recvs, [drain_all(), ulpdu_chunk(
                  untagged(OP_SEND, 0, pattern(9)))], rtr=t, initiator=True))
    # siw's streams, as they came, into a responder with receives posted
    for name, i2r, r2i in fixtures():
        lreq, lrep = frame_len(i2r), frame_len(r2i)
        if not lreq or not lrep or len(i2r) == lreq:
            continue
        crc = bool((flags_of(i2r) | flags_of(r2i)) & 0x40)
        body = i2r[lreq:]
        chunks = []
        while body:
            chunks.append(u8(R_RAW) + u16(min(len(body), 60000)) +
                          body[:60000])
            body = body[60000:]
        write("fuzz_rdmap_rx", "siw-" + name,
              rdmap_input(recvs * 4, chunks + [drain_all()], crc=crc))


# ---- fuzz_conn -------------------------------------------------------------

END_FIN, END_RST, END_DISCONNECT, END_DESTROY = 0, 1, 2, 3

# (how, len): access | 8 other PD | 0x10 at slot end
CONN_REGIONS = [(7, 4096), (4 | 0x10, 4096), (1, 8192), (2 | 8, 512)]


def c_sge(region, off, n):
    return u8(region - 1) + u16(off) + u16(n)


def c_recv(sges):
    return u8(1) + u8(len(sges)) + b"".join(sges)


def c_send(op, flags, sges, inv=0, raddr=0, rkey=0):
    """op: 0 Send, 1 Send with Invalidate, 2 Write, 3 Read."""
    return (u8(op << 1 | flags << 3) + u8(len(sges)) + b"".join(sges) +
            u32(inv) + u64(raddr) + u32(rkey))


def conn_input(posts, chunks, initiator=False, raw_frame=None,
               end=END_FIN, sig_all=False, cut=0, rev=2, crc=FOLLOW,
               markers=FOLLOW, rtr=0, rfirst=False, ird=4, ord_=4,
               peer=(2, FOLLOW, FOLLOW, 0), peer_ird=4, peer_ord=4,
               pd_len=4, regions=CONN_REGIONS):
    b = ((1 if initiator else 0) | (2 if raw_frame is not None else 0) |
         end << 2 | (0x10 if sig_all else 0) | cut << 5)
    o = policy_octet(rev, crc, markers, rtr)
    out = (u64(0xfeed) + u8(b) + u8(o) + u8(15) + u8(15) + u8(64) +
           u8(1 if rfirst else 0) + u8(ird) + u8(ord_) + u8(pd_len) +
           u8(policy_octet(*peer)) + u8(peer_ird) + u8(peer_ord) +
           u64(0xc0ffee) + u8(len(regions) - 1))
    for how, n in regions:
        out += u8(how) + u16(n - 1)  # lengths from 1
    out += u8(len(posts)) + b"".join(posts)
    if raw_frame is not None:
        out += u16(len(raw_frame)) + raw_frame
    else:
        out += u8(pd_len)
    return out + b"".join(chunks)


def conn_seeds():
    recvs = [c_recv([c_sge(3, 0, 2048)]),
             c_recv([c_sge(3, 2048, 1000), c_sge(3, 4096, 3000)])]
    traffic = [
        ("send", [ulpdu_chunk(untagged(OP_SEND, 0, pattern(300)))]),
        ("send-inv", [ulpdu_chunk(untagged(OP_SEND_INV, 0, pattern(8),
                                           rsvd2=stag(1)))]),
        ("write", [ulpdu_chunk(tagged(OP_WRITE, stag(1), 10,
                                      pattern(2000)))]),
        ("write-other-pd", [ulpdu_chunk(tagged(OP_WRITE, stag(4), 0,
                                               pattern(8)))]),
        ("read-request", [ulpdu_chunk(read_request(0x77, 0, 3000, stag(2),
                                                   0))]),
        ("terminate", [ulpdu_chunk(terminate(0, 2, 6, 0))]),
        ("dereg", [u8(C_DEREG) + u8(0), u8(C_DEREG) + u8(2),
                   ulpdu_chunk(tagged(OP_WRITE, stag(1), 0, pattern(8)))]),
        ("garbage", [u8(C_RAW) + u16(64) + pattern(64)]),
        ("qp-to-error", [ulpdu_chunk(untagged(OP_SEND, 0, pattern(30))),
                         u8(C_QP_ERR)]),
        ("disconnect", [u8(C_DISC)]),
    ]
    combos = [dict(), dict(initiator=True), dict(crc=ON),
              dict(markers=ON, initiator=True), dict(rev=1, end=END_RST),
              dict(peer=(2, ON, ON, 0), end=END_DISCONNECT),
              dict(cut=1, end=END_DESTROY), dict(cut=2, sig_all=True)]
    for k, (name, chunks) in enumerate(traffic):
        for j, combo in enumerate(combos):
            if (k + j) % 2:
                continue
            write("fuzz_conn", "%s-%d" % (name, j),
                  conn_input(recvs, chunks, **combo))
    # our own work going out, a Read answered
    out = [c_send(0, 1, [c_sge(1, 0, 100), c_sge(2, 0, 4000)]),
           c_send(2, 1, [c_sge(2, 0, 500)], raddr=0x100, rkey=0x200),
           c_send(3, 1, [c_sge(3, 0, 64)], raddr=0x100, rkey=0x300),
           c_send(0, 4 | 1, [c_sge(1, 0, 10)])]
    for initiator in (False, True):
        write("fuzz_conn", "outgoing-i%d" % initiator, conn_input(out, [
            ulpdu_chunk(untagged(OP_SEND, 0, b"")),
            ulpdu_chunk(tagged(OP_READ_RESP, stag(3), 0, pattern(64))),
            u8(C_POST) + c_recv([c_sge(3, 0, 100)])],
            initiator=initiator, end=END_DISCONNECT))
    # peer-to-peer: the initiator's RTR first, each type
    rtrs = {SEND: untagged(OP_SEND, 0),
            WRITE: tagged(OP_WRITE, 1, 0),
            READ: read_request(1, 0, 0, 1, 0)}
    for t, seg in rtrs.items():
        write("fuzz_conn", "p2p-%d" % t, conn_input(recvs, [
            ulpdu_chunk(seg, fix=FIX_SEQ),
            ulpdu_chunk(untagged(OP_SEND, 0, pattern(9)))],
            peer=(2, FOLLOW, FOLLOW, t), rtr=t))
        write("fuzz_conn", "p2p-%d-initiator" % t, conn_input(recvs, [
            ulpdu_chunk(untagged(OP_SEND, 0, pattern(9)))],
            initiator=True, rtr=t))
    # refused handshakes
    write("fuzz_conn", "markers-refused",
          conn_input(recvs, [], markers=OFF, peer=(2, FOLLOW, ON, 0)))
    write("fuzz_conn", "crc-refused-initiator",
          conn_input(recvs, [], initiator=True, crc=OFF,
                     peer=(2, ON, FOLLOW, 0)))
    # siw's own Requests and streams, as they came
    for name, i2r, r2i in fixtures():
        lreq = frame_len(i2r)
        if not lreq or not i2r.startswith(b"MPA ID Req"):
            continue
        body, chunks = i2r[lreq:], []
        while body:
            chunks.append(u8(C_RAW) + u16(min(len(body), 60000)) +
                          body[:60000])
            body = body[60000:]
        write("fuzz_conn", "siw-" + name,
              conn_input(recvs * 2, chunks, raw_frame=i2r[:lreq]))
    # siw's Replies to our Request
    for name, i2r, r2i in fixtures():
        lrep = frame_len(r2i)
        if lrep and r2i.startswith(b"MPA ID Rep"):
            write("fuzz_conn", "siw-reply-" + name,
                  conn_input(recvs, [u8(C_RAW) + u16(len(r2i) - lrep) +
                                     r2i[lrep:]],
                             initiator=True, raw_frame=r2i[:lrep]))


# ---- fuzz_dump ---------------------------------------------------------------

RAW, RAW_TWO, VERBOSE, HEX, QUIET, STRICT = 1, 2, 4, 8, 16, 32


def dump_seeds(relink):
    caps = os.path.join(DATA, "captures")
    files = sorted(os.listdir(caps))
    with tempfile.TemporaryDirectory() as tmp:
        for k, name in enumerate(files):
            with open(os.path.join(caps, name), "rb") as f:
                data = f.read()
            base = name.rsplit(".", 1)[0]
            write("fuzz_dump", base, u8(k % 2 * VERBOSE) + u8(0) + data)
            if len(data) > 8000:
                continue
            ng = os.path.join(tmp, base + ".pcapng")
            if subprocess.run(["editcap", "-F", "pcapng",
                               os.path.join(caps, name), ng],
                              capture_output=True).returncode == 0:
                with open(ng, "rb") as f:
                    write("fuzz_dump", base + "-pcapng",
                          u8(HEX) + u8(0) + f.read())
            if not relink:
                continue
            for link in ("vlan", "sll", "sll2", "raw", "null"):
                out = os.path.join(tmp, "%s-%s.pcap" % (base, link))
                if subprocess.run([relink, os.path.join(caps, name), out,
                                   link], capture_output=True).returncode:
                    continue
                with open(out, "rb") as f:
                    write("fuzz_dump", "%s-%s" % (base, link),
                          u8(QUIET) + u8(0) + f.read())
    for k, (name, i2r, r2i) in enumerate(fixtures()):
        opt = RAW | RAW_TWO | [0, VERBOSE, HEX, STRICT][k % 4]
        write("fuzz_dump", "raw-" + name,
              u8(opt) + u8(k % 27) + u16(len(i2r)) + i2r + r2i)
        if frame_len(r2i):
            # one direction, FPDUs from the start, framing from the options:
            # choices = CRC + 3 * markers + 9 * start (0 unset, 1 off, 2 on;
            # start 2: FPDUs)
            crc = 2 if (flags_of(i2r) | flags_of(r2i)) & 0x40 else 1
            write("fuzz_dump", "raw-fpdu-" + name,
                  u8(RAW) + u8(crc + 3 * 1 + 9 * 2) + r2i[frame_len(r2i):])


def main():
    relink = sys.argv[1] if len(sys.argv) > 1 else None
    mpa_frame_seeds()
    fpdu_rx_seeds()
    rdmap_rx_seeds()
    conn_seeds()
    dump_seeds(relink)


if __name__ == "__main__":
    main()
