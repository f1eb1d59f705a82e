#!/usr/bin/env python3
"""Rewrites a GGUF file with some metadata keys set or removed; tensors are copied unchanged.

  gguf_set.py IN OUT [KEY=TYPE:VALUE | -KEY] ...

TYPE is u32, i32, f32, bool, str, or an array of them as u32[], i32[], f32[], bool[] with
comma-separated values. `-KEY` removes KEY. Used by tests/peer/key_variants.sh to give
llama.cpp and tzero the same files with hyper-parameters other than the presets' (docs/PEER.md).
Standard library only.
"""
import struct
import sys

SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
NAMES = {"u32": 4, "i32": 5, "f32": 6, "bool": 7, "str": 8}


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.d, self.p)
        self.p += struct.calcsize("<" + fmt)
        return v[0]

    def string(self):
        n = self.take("Q")
        s = self.d[self.p : self.p + n]
        self.p += n
        return s

    def skip_value(self, t):
        if t == 8:
            self.string()
        elif t == 9:
            et, n = self.take("I"), self.take("Q")
            for _ in range(n):
                self.skip_value(et)
        else:
            self.p += struct.calcsize("<" + SCALAR[t])


def encode_string(s):
    b = s if isinstance(s, bytes) else s.encode()
    return struct.pack("<Q", len(b)) + b


def encode_scalar(t, text):
    if t == 8:
        return encode_string(text)
    if t == 7:
        return struct.pack("<?", text in ("1", "true", "True"))
    if t == 6:
        return struct.pack("<f", float(text))
    return struct.pack("<" + SCALAR[t], int(text))


def encode_value(spec):
    tname, _, text = spec.partition(":")
    if tname.endswith("[]"):
        t = NAMES[tname[:-2]]
        items = [x for x in text.split(",") if x != ""]
        body = b"".join(encode_scalar(t, x) for x in items)
        return struct.pack("<I", 9) + struct.pack("<IQ", t, len(items)) + body
    t = NAMES[tname]
    return struct.pack("<I", t) + encode_scalar(t, text)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    src, dst, edits = sys.argv[1], sys.argv[2], sys.argv[3:]
    data = open(src, "rb").read()
    r = Reader(data)
    if r.take("I") != 0x46554747:
        sys.exit(f"{src}: not a GGUF file")
    version, n_tensors, n_kv = r.take("I"), r.take("Q"), r.take("Q")
    sets, removes = {}, set()
    for e in edits:
        if e.startswith("-"):
            removes.add(e[1:])
        else:
            k, _, spec = e.partition("=")
            sets[k] = encode_value(spec)
    kvs, alignment = [], 32
    for _ in range(n_kv):
        start = r.p
        key = r.string().decode()
        t = r.take("I")
        if key == "general.alignment":
            alignment = struct.unpack_from("<I", data, r.p)[0]
        r.skip_value(t)
        kvs.append((key, data[start : r.p]))
    infos_start = r.p
    for _ in range(n_tensors):
        r.string()
        nd = r.take("I")
        r.p += 8 * nd + 4 + 8
    infos = data[infos_start : r.p]
    data_start = (r.p + alignment - 1) // alignment * alignment
    out = []
    for key, raw in kvs:
        if key in removes:
            continue
        out.append(encode_string(key) + sets.pop(key) if key in sets else raw)
    for key, value in sets.items():
        out.append(encode_string(key) + value)
    head = struct.pack("<IIQQ", 0x46554747, version, n_tensors, len(out)) + b"".join(out) + infos
    head += b"\0" * ((-len(head)) % alignment)
    with open(dst, "wb") as f:
        f.write(head)
        f.write(data[data_start:])


if __name__ == "__main__":
    main()
