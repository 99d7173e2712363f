#!/usr/bin/env python3
"""Spills against measured time: for CSVs of `polyk-tune resources` (each logged configuration of a
tuning log compiled by NVRTC), how many correct trials spill, the fastest that does, and how many
within 95% of the best spill -- what `polyk-tune run --max-spill 0` would have lost.
   python3 bench/nvrtc_spills.py bench/results/2026-11-28-nvrtc-spills/*.csv"""
import csv,sys
for f in sys.argv[1:]:
    rows=list(csv.DictReader(open(f)))
    ok=[r for r in rows if r['status']=='ok' and r['registers']]
    best=min(float(r['us']) for r in ok)
    sp=[r for r in ok if int(r['spill_bytes'])>0]
    nsp=[r for r in ok if int(r['spill_bytes'])==0]
    fails=[r for r in rows if r['status']!='ok']
    print(f"{f}: {len(rows)} trials, {len(ok)} correct with NVRTC report, {len(sp)} spill; best {best:.2f} us; "
          f"best spilling {min([float(r['us']) for r in sp] or [0]):.2f} us ({min([float(r['us']) for r in sp] or [0])/best:.1f}x the best); "
          f"within 95% of best that spill: {sum(1 for r in sp if float(r['us'])<=best/0.95)}; not-ok trials {len(fails)} of which spill {sum(1 for r in fails if r['spill_bytes'] and int(r['spill_bytes'])>0)}; nvrtc failures {sum(1 for r in rows if not r['registers'])}")
