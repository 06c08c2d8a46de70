#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Compare a protobuf scrape (decoded to text by pbdecode) with the text scrapes taken just
before and just after it, family by family.

Usage: expocompare.py TEXT1 PROTO TEXT2

- Families: the same names, in the same order, with the same TYPE and HELP lines in all three.
- Series: every series of TEXT1 is in PROTO, every series of PROTO in TEXT2 (same name, same
  labels in the same order, escaped the same way).
- Values, compared as numbers: a series equal in TEXT1 and TEXT2 is equal in PROTO; a counter,
  or a histogram's bucket, _sum or _count, that moved lies between them (TEXT1 <= PROTO <=
  TEXT2); a gauge that moved, or whose family moved, is only checked for presence (durations,
  memory, descriptors).
- A family whose samples are all equal in TEXT1 and TEXT2 ("idle") is the same in PROTO: its
  series, labels and values.
- Native histograms ("# NATIVE" lines): zero_count plus the buckets is the count, and the count
  is the classic _count of the same series.

Prints one "ok - ..." or "not ok - ..." line per check (TAP, as tests/lib.sh) and a summary line
"families=N idle=N series=N moved=N native=N"; exits 1 if a check failed.
"""
import math
import re
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$')


def same(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


def parse(path):
    """families: [(name, type, [meta lines])], series: {key: (family, value)} in order,
    natives: [line]."""
    families, series, natives, order = [], {}, [], []
    fam = None
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('# NATIVE '):
                natives.append(line[len('# NATIVE '):])
                continue
            if line.startswith('# EXEMPLAR '):
                continue
            if line.startswith('# HELP ') or line.startswith('# TYPE '):
                name = line.split(' ')[2]
                if fam is None or fam[0] != name:
                    fam = [name, None, []]
                    families.append(fam)
                fam[2].append(line)
                if line.startswith('# TYPE '):
                    fam[1] = line.split(' ')[3]
                continue
            m = SAMPLE.match(line)
            if not m or fam is None:
                raise SystemExit('%s: not a sample line: %r' % (path, line))
            key = m.group(1) + (m.group(2) or '')
            # float() reads +Inf, -Inf and NaN as the text format writes them.
            if key in series:
                raise SystemExit('%s: series twice: %s' % (path, key))
            series[key] = (fam[0], float(m.group(3)))
            order.append(key)
    return families, series, natives


def main():
    t1, pb, t2 = (parse(p) for p in sys.argv[1:4])
    failed = 0

    def report(ok, what, detail=''):
        nonlocal failed
        print(('ok - ' if ok else 'not ok - ') + what)
        if not ok:
            failed += 1
            for d in detail.splitlines()[:20]:
                print('#   ' + d)

    fams = [tuple([f[0], f[1], tuple(f[2])]) for f in t1[0]]
    for name, other in (('protobuf', pb), ('the second text scrape', t2)):
        got = [tuple([f[0], f[1], tuple(f[2])]) for f in other[0]]
        diff = [('text: %s' % (a,), 'other: %s' % (b,)) for a, b in zip(fams, got) if a != b]
        report(fams == got, 'families, TYPE and HELP of %s match the first text scrape (%d)'
               % (name, len(fams)),
               'lengths %d and %d\n' % (len(fams), len(got)) +
               '\n'.join('%s\n%s' % d for d in diff[:5]))
    types = {f[0]: f[1] for f in t1[0]}

    missing = [k for k in t1[1] if k not in pb[1]]
    report(not missing, 'every series of the first text scrape is in protobuf (%d)' % len(t1[1]),
           '\n'.join(missing))
    extra = [k for k in pb[1] if k not in t2[1]]
    report(not extra, 'every series in protobuf is in the second text scrape (%d)' % len(pb[1]),
           '\n'.join(extra))

    moved_fams = set()
    for k, (fam, v1) in t1[1].items():
        if k in t2[1] and not same(v1, t2[1][k][1]):
            moved_fams.add(fam)
    for k in set(t2[1]) - set(t1[1]):
        moved_fams.add(t2[1][k][0])
    bad, moved, idle_series = [], 0, 0
    for k, (fam, vp) in pb[1].items():
        v1 = t1[1].get(k, (None, None))[1]
        v2 = t2[1].get(k, (None, None))[1]
        # Equal ends mean no change between for a counter or a histogram; a gauge goes both
        # ways (a collector's scrape duration can read the same twice by chance), so one whose
        # family moved is only checked for presence.
        if v1 is not None and v2 is not None and same(v1, v2) and \
                (types.get(fam) in ('counter', 'histogram') or fam not in moved_fams):
            idle_series += 1
            if not same(vp, v1):
                bad.append('%s: text %r, protobuf %r' % (k, v1, vp))
            continue
        moved += 1
        if types.get(fam) in ('counter', 'histogram'):
            lo = v1 if v1 is not None else -math.inf
            if not (lo <= vp <= v2):
                bad.append('%s: text %r then %r, protobuf %r between' % (k, v1, v2, vp))
    report(not bad, 'values: %d series equal in both text scrapes are equal in protobuf, %d '
           'moved (counters and histograms between the two)' % (idle_series, moved),
           '\n'.join(bad))
    idle = [f for f in fams if f[0] not in moved_fams]
    report(len(idle) > 0, '%d of %d families idle, compared exactly' % (len(idle), len(fams)))

    nbad = []
    for line in pb[2]:
        # Label values may hold spaces: the fields start at the last " schema=".
        key, rest = line.rsplit(' schema=', 1)
        fields = dict(x.split('=', 1) for x in ('schema=' + rest).split(' '))
        base = key.split('{')[0]
        count_key = base + '_count' + key[len(base):]
        # The zero bucket plus the buckets, from the buckets themselves (pbdecode's "total"
        # already holds zero_count: adding it again failed every observation of 0).
        buckets = [b for b in fields['buckets'].split(',') if b]
        total = int(fields['zero_count']) + sum(int(b.split(':')[1]) for b in buckets)
        if total != int(fields['total']):
            nbad.append('%s: zero_count + buckets %d, pbdecode\'s total %s'
                        % (key, total, fields['total']))
        if total != int(fields['count']):
            nbad.append('%s: zero_count + buckets %d, count %s' % (key, total, fields['count']))
        if count_key not in pb[1] or pb[1][count_key][1] != total:
            nbad.append('%s: classic %s is %r, native total %d'
                        % (key, count_key, pb[1].get(count_key), total))
    if pb[2]:
        report(not nbad, 'native histograms (%d): zero bucket and buckets add up to the count, '
               'the classic one\'s too' % len(pb[2]), '\n'.join(nbad))
    print('# families=%d idle=%d series=%d moved=%d native=%d'
          % (len(fams), len(idle), len(pb[1]), moved, len(pb[2])))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
