"""Module map: import arrows between the checkout's modules, and the floors (longest chain) of the graph."""
import sys, grimp, functools, collections
g = grimp.build_graph("gpudiag", "gpudiag_node")
mods = sorted(m for m in g.modules)
edges = {(a, b) for a in mods for b in g.find_modules_directly_imported_by(a) if b in g.modules and a != b}
# condense cycles (Tarjan) then longest path
adj = collections.defaultdict(set)
for a, b in edges: adj[a].add(b)
index, low, st, on, comp = {}, {}, [], set(), {}
sys.setrecursionlimit(10000)
def visit(v):
    index[v] = low[v] = len(index); st.append(v); on.add(v)
    for w in adj[v]:
        if w not in index: visit(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        while True:
            w = st.pop(); on.discard(w); comp[w] = v
            if w == v: break
for v in mods:
    if v not in index: visit(v)
cadj = collections.defaultdict(set)
for a, b in edges:
    if comp[a] != comp[b]: cadj[comp[a]].add(comp[b])
@functools.cache
def depth(c): return 1 + max((depth(d) for d in cadj[c]), default=0)
floors = max(depth(comp[m]) for m in mods)
cycles = collections.Counter(comp.values()); big = [c for c, n in cycles.items() if n > 1]
layer = lambda m: m.split(".")[1] if m.startswith("gpudiag.") and m.count(".") >= 1 else m
lay = collections.Counter((layer(a), layer(b)) for a, b in edges if layer(a) != layer(b))
print(f"{len(mods)} modules, {len(edges)} import arrows, {floors} floors, {len(big)} cycles")
print("arrows between layers:", len(lay))
for (a, b), n in sorted(lay.items()): print(f"  {a:10s} -> {b:10s} {n}")
