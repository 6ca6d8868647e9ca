#!/usr/bin/env python3
"""symbolize.py SYSTEM.MAP PROFILE [OPS]: instructions per kernel function
(per op if OPS given), from kprof's 'vaddr insns count' lines."""
import bisect, sys
if len(sys.argv) not in (3, 4):
    sys.exit("usage: symbolize.py SYSTEM.MAP PROFILE [OPS]")
syms = []
for line in open(sys.argv[1]):
    a, t, name = line.split()[:3]
    if t.lower() in "tw":
        syms.append((int(a, 16), name))
syms.sort()
addrs = [a for a, _ in syms]
ops = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
tot = {}
for line in open(sys.argv[2]):
    if line.startswith("#"):
        continue
    v, n, c = line.split()
    v = int(v, 16)
    i = bisect.bisect_right(addrs, v) - 1
    name = syms[i][1] if i >= 0 else "?"
    tot[name] = tot.get(name, 0) + int(n) * int(c)
s = sum(tot.values())
print(f"{'total':40} {s/ops:10.1f}")
for k, v in sorted(tot.items(), key=lambda kv: -kv[1]):
    if v / ops >= 0.5:
        print(f"{k:40} {v/ops:10.1f}")
