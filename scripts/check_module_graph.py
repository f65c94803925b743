#!/usr/bin/env python3
"""Check that the module graph of each crate's src/ is acyclic, and that
its layers (top-level folders, in LAYERS) only import downwards.

Why: rustc accepts import cycles between modules (a uses b, b uses a), but they
blur a crate's layering and keep modules from being understood, tested or split
out one at a time. `make test` runs this to keep them out; on a cycle it names
one file:line per edge, so whoever breaks the cycle knows where to look.

Edges come from `use crate::/super::/self::` trees (nested braces included),
fully-qualified `crate::a::f()` / `super::x` paths in code and bare paths into
a child module; each path is resolved to the longest existing module. Not
edges: the crate root (it only declares and re-exports), `mod` declarations,
a module's `pub use` of its own descendants, comments, string literals and
`mod tests { ... }` blocks. Dependency-free; `--self-test` checks the checker.

Layers: a crate in LAYERS lists its top-level modules bottom up; a module in
one of them may import its own layer and the ones listed before it, never a
later one (each folder's `//!` paragraph says the same in words). Cargo
keeps the direction between crates (the proto crate depends on no runtime);
this keeps it within one.
"""
import bisect
import os
import re
import sys
import tempfile

DEFAULT_CRATES = ["proto/src", "core/src", "cli/src", "bindings-node/src", "bindings-python/src"]
LAYERS = {
    "proto/src": ["model", "report", "options", "contract", "machine", "wire"],
    "core/src": ["runtime", "stores", "providers"],
}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHAR_LIT = re.compile(r"'(\\.[^'\n]*|[^\\'\n])'")
RAW_STR = re.compile(r'[bc]?r(#*)"')
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|::|\S")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def module_of(rel_path):
    """src/-relative file path -> module tuple (() is the crate root)."""
    parts = rel_path[:-3].split(os.sep)
    return tuple(parts[:-1] if parts[-1] == "mod" or parts in (["lib"], ["main"]) else parts)


def name(module):
    """Module tuple -> `a::b` (or `crate`) for printing."""
    return "::".join(module) or "crate"


def literal_end(src, i):
    """End of the comment or string/char literal starting at src[i], else None."""
    n, ident_before = len(src), i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_")
    if src.startswith("//", i):
        return n if src.find("\n", i) < 0 else src.find("\n", i)
    if src.startswith("/*", i):
        depth, j = 0, i
        while j < n and (depth or j == i):
            step = src[j:j + 2]
            depth += {"/*": 1, "*/": -1}.get(step, 0)
            j += 2 if step in ("/*", "*/") else 1
        return j
    raw = None if ident_before else RAW_STR.match(src, i)
    if raw:
        close = src.find('"' + raw.group(1), raw.end())
        return n if close < 0 else close + 1 + len(raw.group(1))
    if src[i] == '"':
        j = i + 1
        while j < n and src[j] != '"':
            j += 2 if src[j] == "\\" else 1
        return j + 1
    char = CHAR_LIT.match(src, i) if src[i] == "'" else None
    return char.end() if char else None


def strip_noise(src):
    """Blank comments, literals and `mod tests { ... }`, keeping line numbers."""
    out, i = [], 0
    while i < len(src):
        end = literal_end(src, i)
        out.append(src[i] if end is None else re.sub(r"[^\n]", " ", src[i:end]))
        i = i + 1 if end is None else end
    text = "".join(out)
    for m in reversed(list(re.finditer(r"\bmod\s+tests\s*\{", text))):
        depth, j = 0, m.end() - 1
        while j < len(text) and (depth := depth + {"{": 1, "}": -1}.get(text[j], 0)):
            j += 1
        text = text[:m.start()] + re.sub(r"[^\n]", " ", text[m.start():j + 1]) + text[j + 1:]
    return text


def tokenize(text):
    """List of (token, line), with sentinels so look-ahead never runs off the end."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    toks = [(m.group(), bisect.bisect_right(starts, m.start())) for m in TOKEN.finditer(text)]
    return toks + [("", 0)] * 3


def parse_use_tree(toks, i, prefix):
    """Parse one use tree at toks[i]; return ([(segments, line)], next index)."""
    segs = list(prefix)
    i += toks[i][0] == "::"
    while IDENT.match(toks[i][0]) and toks[i + 1][0] == "::" and not (segs and toks[i][0] == "self"):
        segs.append(toks[i][0])
        i += 2
    tok, line = toks[i]
    if tok == "{":
        paths, i = [], i + 1
        while toks[i][0] not in ("}", ";", ""):
            sub, j = parse_use_tree(toks, i, segs)
            paths, i = paths + sub, max(j, i + 1)
            i += toks[i][0] == ","
        return paths, i + 1
    if IDENT.match(tok) and not (segs and tok == "self"):
        segs.append(tok)  # the leaf name; `*` and `{self}` name the prefix itself
    i += bool(tok == "*" or IDENT.match(tok))
    return [(segs, line)], i + 2 * (toks[i][0] == "as")


def resolve(segs, scope, modules):
    """Path segments seen in `scope` -> the longest existing module, or None."""
    if segs[0] == "crate":
        base, k = (), 1
    elif segs[0] in ("self", "super") or scope + (segs[0],) in modules:
        base, k = scope, 0
        while k < len(segs) and segs[k] in ("self", "super"):
            if segs[k] == "super" and not base:
                return None
            base, k = base[:-1] if segs[k] == "super" else base, k + 1
    else:
        return None  # external crate, std, or a local item
    full = base + tuple(segs[k:])
    return next(full[:j] for j in range(len(full), -1, -1) if full[:j] in modules)


def is_pub(toks, i):
    """True if the `use` at toks[i] is preceded by `pub` or `pub(...)`."""
    j = i - 1
    while toks[i - 1][0] == ")" and j > 0 and toks[j + 1][0] != "(":
        j -= 1
    return toks[j][0] == "pub"


def file_refs(toks, module, modules):
    """Yield (target module, line, is_pub_use) for every path in one file."""
    depth, scopes, i = 0, [], 0
    while toks[i][0]:
        tok, scope = toks[i][0], module + tuple(s for s, _ in scopes)
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
            if scopes and scopes[-1][1] == depth:
                scopes.pop()
        elif tok == "mod" and IDENT.match(toks[i + 1][0]) and toks[i + 2][0] == "{":
            scopes.append((toks[i + 1][0], depth))
            i += 1
        elif tok == "use":
            paths, end = parse_use_tree(toks, i + 1, [])
            for segs, line in paths:
                if segs:
                    yield resolve(segs, scope, modules), line, is_pub(toks, i)
            i = end - 1
        elif (IDENT.match(tok) and toks[i + 1][0] == "::" and toks[i - 1][0] not in ("::", ".")
              and (tok in ("crate", "super", "self") or scope + (tok,) in modules)):
            segs = [tok]
            while toks[i + 1][0] == "::" and IDENT.match(toks[i + 2][0]):
                segs.append(toks[i + 2][0])
                i += 2
            yield resolve(segs, scope, modules), toks[i][1], False
        i += 1


def analyze(src_dir, shown_as=None):
    """Return (modules, {(from, to): "file:line"}) for one crate's src dir."""
    files = {os.path.join(d, f): module_of(os.path.relpath(os.path.join(d, f), src_dir))
             for d, _, names in os.walk(src_dir) for f in names if f.endswith(".rs")}
    modules, edges = set(files.values()) | {()}, {}
    for path, module in sorted(files.items()):
        if module == ():
            continue  # the crate root only declares and re-exports
        with open(path, encoding="utf-8") as f:
            toks = tokenize(strip_noise(f.read()))
        for target, line, pub_use in file_refs(toks, module, modules):
            # A parent's `pub use child::X` re-exports; it does not depend on the child.
            if target not in (None, module) and not (pub_use and target[: len(module)] == module):
                where = os.path.relpath(path, shown_as) if shown_as else path
                edges.setdefault((module, target), f"{where}:{line}")
    return modules, edges


def cycles(modules, edges):
    """Strongly connected components of size > 1 (Tarjan), each sorted."""
    succ = {m: sorted(b for a, b in edges if a == m) for m in modules}
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on_stack.discard(comp[-1])
            if len(comp) > 1:
                found.append(sorted(comp))

    for m in sorted(modules):
        if m not in index:
            visit(m)
    return sorted(found)


def upward(edges, layers):
    """Edges from a layer to a later one: [(from, to, where)], sorted."""
    rank = {layer: i for i, layer in enumerate(layers)}
    return sorted((a, b, where) for (a, b), where in edges.items()
                  if a and b and a[0] in rank and b[0] in rank and rank[a[0]] < rank[b[0]])


def check(crate_dirs):
    """Print every cycle and upward import; return 0 if there is none, 1 otherwise."""
    total, bad = 0, False
    for crate in crate_dirs:
        src = os.path.join(ROOT, crate)
        if not os.path.isdir(src):
            print(f"check_module_graph: no such directory: {src}", file=sys.stderr)
            return 2
        modules, edges = analyze(src, ROOT)
        total += len(modules)
        for comp in cycles(modules, edges):
            bad = True
            print(f"{crate}: import cycle among {len(comp)} modules: "
                  + ", ".join(name(m) for m in comp))
            for (a, b), where in sorted(edges.items()):
                if a in comp and b in comp:
                    print(f"    {name(a)} -> {name(b)}    ({where})")
        for a, b, where in upward(edges, LAYERS.get(crate, [])):
            bad = True
            print(f"{crate}: layer {a[0]} imports the later layer {b[0]}: "
                  f"{name(a)} -> {name(b)}    ({where})")
    if not bad:
        print(f"module graph: acyclic, layers downward ({total} modules in {len(crate_dirs)} crates)")
    return 1 if bad else 0


SELF_TESTS = {
    "cycle detected": ({
        "lib.rs": "mod a; mod b;", "a.rs": "use crate::b::X;",
        "b.rs": "fn f() { crate::a::g(); }"}, [["a", "b"]], {("a", "b"), ("b", "a")}),
    "nested use groups": ({
        "lib.rs": "", "a.rs": "use crate::{b::X, c::{d::Y, Z}};\nuse super::e::{self};",
        "b.rs": "", "c/mod.rs": "", "c/d.rs": "", "e.rs": ""},
        [], {("a", "b"), ("a", "c::d"), ("a", "c"), ("a", "e")}),
    "comments and strings ignored": ({
        "lib.rs": "", "b.rs": "use crate::a::X;", "c.rs": "",
        "a.rs": "// use crate::b::X;\n/* crate::b::f() /* nested */ crate::b::g */\n"
                "/// crate::b::doc\nfn f<'a>(x: &'a str) { let s = \"crate::b::X \\\" crate::b\";\n"
                "let r = r#\"a \" crate::b::Y\"#; let c = '\"'; let d = '\\''; let e = br\"\\\";\n"
                "crate::c::real(); }\nconst T: &str = \"\";"},
        [], {("b", "a"), ("a", "c")}),
    "mod tests ignored": ({
        "lib.rs": "", "b.rs": "use crate::a::X;",
        "a.rs": "pub fn f() {}\n#[cfg(test)]\nmod tests {\n use crate::b::X;\n"
                " fn t() { if true { crate::b::y(); } }\n}\nfn g() {}"},
        [], {("b", "a")}),
    "parent re-export ignored": ({
        "lib.rs": "mod p;", "p/mod.rs": "mod c;\npub use c::X;\npub(crate) use self::c::Y;",
        "p/c.rs": "use super::Z;\nfn f() { crate::p::g(); }"}, [], {("p::c", "p")}),
    "a layer importing a later one": ({
        "lib.rs": "", "low/mod.rs": "pub mod a;", "low/a.rs": "use crate::high::X;",
        "high.rs": "use crate::low::a::Y;", "other.rs": "use crate::high::Z;"},
        [["high", "low::a"]], {("low::a", "high"), ("high", "low::a"), ("other", "high")},
        {("low::a", "high")}),
}


def self_test():
    """Run the checker on small synthetic trees; return 0 if every case passes."""
    failures = 0
    for title, (tree, want_cycles, want_edges, *rest) in SELF_TESTS.items():
        want_upward = set(rest[0]) if rest else set()
        with tempfile.TemporaryDirectory() as tmp:
            for rel, text in tree.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
                with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            modules, edges = analyze(tmp)
            got_edges = {(name(a), name(b)) for a, b in edges}
            got_cycles = [[name(m) for m in c] for c in cycles(modules, edges)]
            got_upward = {(name(a), name(b)) for a, b, _ in upward(edges, ["low", "high"])}
        ok = got_edges == want_edges and got_cycles == want_cycles and got_upward == want_upward
        failures += not ok
        print(f"self-test {'ok  ' if ok else 'FAIL'}: {title}"
              + ("" if ok else f" (edges {sorted(got_edges)}, cycles {got_cycles}, upward {sorted(got_upward)})"))
    return 1 if failures else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(self_test() if args == ["--self-test"] else check(args or DEFAULT_CRATES))
