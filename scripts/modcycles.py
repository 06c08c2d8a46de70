#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Module dependency cycles, folder layering and file-scope state of the exporter, from the
built objects and the sources' #include lines.

A module (exporter/X.c and X.h, metrics/X.c and X.h) depends on another when it uses a symbol
the other defines or includes the other's header. Prints each cycle (a strongly connected
component of more than one module); each call or #include from one folder of exporter/ into
another that the caller's README does not name on its "May call:" line (the top-level files, apart from main.c which may call any, are the folder
"core", with exporter/README.md); and each writable file-scope variable (.data or .bss,
objdump -t) outside main.c but the process-wide ones below, and exits 1; or says there is none.
Usage: scripts/modcycles.py [BUILD_DIR] [-v: the graph].
"""
import subprocess, glob, os, re, sys
args = [a for a in sys.argv[1:] if a != '-v']
b = args[0] if args else 'build'
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
# Only objects whose source is still there: a moved or deleted file leaves its object behind.
objs = [o for o in glob.glob(b + '/exporter/**/*.o', recursive=True) + glob.glob(b + '/metrics/*.o')
        if os.path.exists(os.path.join(root, os.path.relpath(o, b)[:-2] + '.c'))]
if not objs:
    sys.exit('modcycles: no objects under %s/exporter: build first' % b)
defs, undefs = {}, {}
for o in objs:
    m = os.path.relpath(o, b)[:-2]
    out = subprocess.run(['nm', o], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TDRB':
            defs[parts[2]] = m
        elif len(parts) == 2 and parts[0] == 'U':
            undefs.setdefault(m, set()).add(parts[1])
g = {m: set() for m in set(defs.values()) | set(undefs)}
for m, us in undefs.items():
    for u in us:
        if u in defs and defs[u] != m:
            g[m].add(defs[u])
# #include lines are dependencies too (a header's module is its path without .h): an include
# that runs back up fails like a call. Resolved as the compiler does: the includer's folder,
# then -Ibpf -Iexporter -Imetrics; headers outside exporter/ and metrics/ (bpf/'s, generated
# ones, the system's) are below every module.
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
def resolve(frm, name):
    for d in (os.path.dirname(frm), 'bpf', 'exporter', 'metrics'):
        p = os.path.normpath(os.path.join(d, name))
        if os.path.exists(os.path.join(root, p)):
            return p[:-2] if p.startswith(('exporter/', 'metrics/')) else None
    return None
includes = []
for path in sorted(glob.glob(os.path.join(root, 'exporter/**/*.[ch]'), recursive=True) +
                   glob.glob(os.path.join(root, 'metrics/*.[ch]'))):
    rel = os.path.relpath(path, root)
    m = rel[:-2]
    for line in open(path, errors='replace'):
        x = INC.match(line)
        d = x and resolve(rel, x.group(1))
        if d and d != m:
            includes.append((m, d))
# A header of no source file (a folder's shared declarations) stands for what it includes: it
# is no module of its own, so "a.c includes shared.h, which includes b.h" is a -> b.
mods = {os.path.relpath(c, root)[:-2] for c in glob.glob(os.path.join(root, 'exporter/**/*.c'),
                                                            recursive=True)}
mods |= {os.path.relpath(c, root)[:-2] for c in glob.glob(os.path.join(root, 'metrics/*.c'))}
inc = {}
for m, d in includes:
    inc.setdefault(m, set()).add(d)
def through(d, seen):
    if d in mods:
        return {d}
    if d in seen:
        return set()
    seen.add(d)
    return set().union(*(through(x, seen) for x in inc.get(d, ()))) if inc.get(d) else set()
for m, d in includes:
    if m in mods:
        for x in through(d, set()) - {m}:
            g.setdefault(m, set()).add(x)
            g.setdefault(x, set())
# Tarjan
idx, low, st, on, comps, n = {}, {}, [], set(), [], [0]
def sc(v):
    idx[v] = low[v] = n[0]; n[0] += 1; st.append(v); on.add(v)
    for w in g[v]:
        if w not in idx:
            sc(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        c = []
        while True:
            w = st.pop(); on.discard(w); c.append(w)
            if w == v: break
        comps.append(c)
sys.setrecursionlimit(10000)
for v in g:
    if v not in idx: sc(v)
cyc = [c for c in comps if len(c) > 1]
for c in cyc:
    print('cycle:', ' '.join(sorted(c)))
if not cyc:
    print('no module cycle (%d modules)' % len(g))
if '-v' in sys.argv:
    for m in sorted(g):
        print(m, '->', ' '.join(sorted(g[m])))
def folder(m):
    """exporter/http/status -> http; exporter/scrape -> core; metrics/metrics -> metrics."""
    parts = m.split('/')
    if parts[0] == 'metrics':
        return 'metrics'
    return parts[1] if len(parts) > 2 else 'main' if parts[1] == 'main' else 'core'
src = os.path.join(root, 'exporter')
allowed = {}
for f in set(map(folder, set(g) | {d for _, d in includes})) - {'main', 'metrics'}:
    readme = os.path.join(src, 'README.md' if f == 'core' else f + '/README.md')
    try:
        line = next(l for l in open(readme) if l.startswith('May call:'))
    except (OSError, StopIteration):
        sys.exit('modcycles: %s has no "May call:" line' % readme)
    allowed[f] = {w.strip(' .`\n') for w in line[len('May call:'):].split(',')} - {'', 'nothing'}
layering = []
edges = {(m, d) for m in g for d in g[m]} | set(includes)
for m, d in sorted(edges):
    fm, fd = folder(m), folder(d)
    if fm not in ('main', 'metrics', fd) and fd not in allowed[fm]:
        layering.append('%s -> %s (%s may call: %s)' % (m, d, fm, ', '.join(sorted(allowed[fm]))))
for x in layering:
    print('layering:', x)
if not layering:
    print('every call and #include between folders is one the caller\'s README allows')
# Process-wide by nature: the log threshold, libcurl's functions loaded once.
ALLOWED = {('exporter/base/log', 'log_threshold'), ('exporter/pods/kubecurl', 'kube_lc'),
           ('exporter/pods/kubecurl', 'lc_handle')}
state = []
for o in objs:
    m = os.path.relpath(o, b)[:-2]
    out = subprocess.run(['objdump', '-t', o], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        # "addr l O .bss size name": objects in writable data, not .data.rel.ro (relocated
        # constants) and not the compiler's or a sanitizer's own (".L...", "__...").
        if len(f) < 6 or 'O' not in f[1:-3] or f[-1].startswith(('.', '__')):
            continue
        sec, name = f[-3], f[-1].split('.')[0]  # "fams.0": a function's static
        if sec.split('.')[1] in ('bss', 'data') and not sec.startswith('.data.rel.ro') \
                and m != 'exporter/main' and (m, name) not in ALLOWED:
            state.append('%s: %s (%s)' % (m, f[-1], sec))
for x in state:
    print('file-scope state:', x)
if not state:
    print('no file-scope state outside main.c')
sys.exit(1 if cyc or state or layering else 0)
