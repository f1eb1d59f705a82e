#!/usr/bin/env python3
"""Every tzero command shown in README.md and docs/*.md must parse with the real binary.

Commands are taken from fenced code blocks (whole lines, `\\` continuations joined, a leading
`$ ` prompt dropped) and from inline code spans that start with `tzero `. A command is a shell
pipeline segment whose first word (after VAR=value assignments) is `tzero` or a path ending in
`/tzero` (build/tzero, build-cuda/tzero); what follows a redirection, `|`, `&`, `;` or `#` is not
part of it. `$(...)` and `$VAR` become a placeholder value.

Synopses are expanded: `[...]` is optional, `(a | b)` and `[a | b]` are alternatives, a word
`x|y` is a choice of values, `...` repeats. Each synopsis is checked as several concrete
commands: the minimal one (no optional part, first alternatives), the full one (every optional
part, first alternatives), and one per other alternative. A placeholder value in capitals (N,
FILE, MODEL) becomes a value the option accepts ("1", or the first of --mode's values, ...).

Each concrete command runs as `TZERO_PARSE_ONLY=1 tzero ARGS...`: main exits 0 right after a
successful parse, before anything runs. A code block's command must exit 0. An inline span is
often a fragment (`tzero run --json`), so there a missing required option or value is allowed,
but an unknown command, an unknown option or a bad value is not.

Usage: check_doc_commands.py [-v] TZERO ROOT         check README.md and docs/*.md under ROOT
                                                     (-v: print every concrete command)
       check_doc_commands.py --self-test TZERO ROOT  show that planted mistakes are caught
Exit status 0 when every command parses, 1 otherwise (FILE:LINE: the command and tzero's error).
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

# Values for capitalised placeholders after options that only take some values.
PLACEHOLDER_VALUES = {
    "--mode": "deterministic",
    "--kv-type": "f32",
    "--kernels": "auto",
    "--pooling": "mean",
    "--dtype": "f32",
    "--preset": "tiny",
}
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$")
# Inline fragments may leave out what a full command needs.
FRAGMENT_OK = re.compile(r"is required$|needs a value$|give a (sub)?command")


class Word:
    """A shell word: its text, and for each character whether it was inside quotes."""

    def __init__(self, text, mask):
        self.text, self.mask = text, mask
        self.quoted = any(mask)


def dollar_length(s, i):
    """Length of the $(...) (nested), ${VAR} or $VAR at s[i], or 0 for a plain '$'."""
    if s.startswith("$(", i):
        depth, j = 1, i + 2
        while j < len(s) and depth:
            depth += {"(": 1, ")": -1}.get(s[j], 0)
            j += 1
        return j - i
    m = re.match(r"\$(\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)", s[i:])
    return len(m.group(0)) if m else 0


def substitute(s):
    """$(...), ${VAR} and $VAR become the placeholder value 1."""
    out, i = [], 0
    while i < len(s):
        n = dollar_length(s, i) if s[i] == "$" else 0
        out.append("1" if n else s[i])
        i += n or 1
    return "".join(out)


def shell_words(line):
    """Words and operators of one line, quotes removed (quoted words are literal)."""
    tokens, i, n = [], 0, len(line)
    while i < n:
        c = line[i]
        if c.isspace():
            i += 1
            continue
        if c == "#":
            break
        if line.startswith(("&&", "||", "2>", ">>"), i):
            tokens.append(("op", line[i : i + 2]))
            i += 2
            continue
        if c in ";&<>":
            tokens.append(("op", c))
            i += 1
            continue
        if c == "|":
            tokens.append(("bar", c))
            i += 1
            continue
        text, mask = "", []
        while i < n and not line[i].isspace() and line[i] not in ";&<>":
            if line[i] in "'\"":
                q = line[i]
                j = line.find(q, i + 1)
                if j < 0:
                    j = n
                part = substitute(line[i + 1 : j]) if q == '"' else line[i + 1 : j]
                text += part
                mask += [True] * len(part)
                i = j + 1
            elif line[i] == "|" and not text:
                break
            elif line[i] == "$" and dollar_length(line, i):
                text += "1"
                mask.append(False)
                i += dollar_length(line, i)
            else:
                text += line[i]
                mask.append(False)
                i += 1
        tokens.append(("word", Word(text, mask)))
    return tokens


def synopsis_items(words):
    """Splits unquoted words into brackets, alternatives and ellipses; returns a flat list."""
    items = []
    for kind, w in words:
        if kind == "bar":
            items.append(("|", None))
            continue
        # Brackets, parentheses and "..." count only outside quotes.
        t, mask = w.text, w.mask
        while t and t[0] in "[(" and not mask[0]:
            items.append((t[0], None))
            t, mask = t[1:], mask[1:]
        tail = []
        while True:
            if t.endswith("...") and not any(mask[-3:]):
                t, mask = t[:-3], mask[:-3]
            elif t and t[-1] in "])" and not mask[-1]:
                tail.insert(0, (t[-1], None))
                t, mask = t[:-1], mask[:-1]
            else:
                break
        if t:
            choice = not any(mask) and "|" in t.strip("|")
            # "a|b|..." : the values shown, and more (the empty one is dropped).
            items.append(("word", [v for v in t.split("|") if v] if choice else [t]))
        items.extend(tail)
    return items


def parse_seq(items, i, closer):
    """seq := (word | [alt] | (alt))*, up to `closer`; returns (alternatives, next index)."""
    alts, seq = [], []
    while i < len(items):
        kind, val = items[i]
        if kind == closer:
            alts.append(seq)
            return ("alt", alts), i + 1
        if kind == "|":
            alts.append(seq)
            seq = []
            i += 1
        elif kind in "[(":
            node, i = parse_seq(items, i + 1, "]" if kind == "[" else ")")
            seq.append(("opt", node) if kind == "[" else node)
        elif kind in "])":
            raise ValueError("unbalanced '" + kind + "'")
        else:
            seq.append(("word", val))
            i += 1
    if closer:
        raise ValueError("missing '" + closer + "'")
    alts.append(seq)
    return ("alt", alts), i


def first(node):
    kind, val = node
    if kind == "word":
        return [val[0]]
    if kind == "opt":
        return []
    return [w for child in val[0] for w in first(child)]


def full(node):
    kind, val = node
    if kind == "word":
        return [val[0]]
    if kind == "opt":
        return full(val)
    return [w for child in val[0] for w in full(child)]


def variants(node):
    """The full form, and one form per alternative other than the first, anywhere inside."""
    kind, val = node
    if kind == "word":
        return [[v] for v in val]
    if kind == "opt":
        return variants(val)
    out = []
    for a, seq in enumerate(val):
        base = [full(child) for child in seq]
        flat = [w for part in base for w in part]
        if a == 0 or flat:
            out.append(flat)
        for k, child in enumerate(seq):
            for v in variants(child)[1:]:
                out.append([w for part in base[:k] + [v] + base[k + 1 :] for w in part])
    return out


def concrete(args):
    """Capitalised placeholders become values their option takes."""
    out = []
    for k, a in enumerate(args):
        if PLACEHOLDER.match(a) and k > 0 and out[k - 1].startswith("-"):
            a = PLACEHOLDER_VALUES.get(out[k - 1], "1")
        out.append(a)
    return out


def commands_of(line):
    """The tzero commands of one shell line: lists of (kind, value) tokens after `tzero`."""
    found, tokens, depth = [], shell_words(line), 0
    seg = []
    for kind, val in tokens + [("op", ";")]:
        if kind == "word":
            bare = "".join(c for c, q in zip(val.text, val.mask) if not q)
            depth += bare.count("[") + bare.count("(") - bare.count("]") - bare.count(")")
        if kind == "op" or (kind == "bar" and depth <= 0):
            words = [v for k, v in seg if k == "word"]
            while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0].text):
                words, seg = words[1:], seg[1:]
            is_tzero = words and (words[0].text == "tzero" or words[0].text.endswith("/tzero"))
            # "tzero chat: model ..." is a line of output (a banner, a message), not a command.
            if is_tzero and not (len(words) > 1 and words[1].text.endswith(":")):
                found.append(seg[1:])
            seg, depth = [], 0
            # After a redirection the next word is its file, not a command.
            if kind == "op" and val in ("<", ">", ">>", "2>"):
                seg = [("skip", None)]
            continue
        if seg[:1] == [("skip", None)]:
            seg = []
            continue
        seg.append((kind, val))
    return found


def doc_commands(root):
    """(file, line, text, fragment?) for every command in README.md and docs/*.md."""
    files = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    for path in files:
        if not path.exists():
            continue
        rel = path.relative_to(root)
        lines = path.read_text(encoding="utf-8").split("\n")
        in_block, i = False, 0
        while i < len(lines):
            line, start = lines[i], i + 1
            i += 1
            if line.lstrip().startswith("```"):
                in_block = not in_block
                continue
            if in_block:
                # A `\` continuation, or a synopsis's indented next line starting with an option.
                while i < len(lines) and (line.rstrip().endswith("\\") or
                                          re.match(r"^\s+[\[(-]", lines[i])):
                    line = line.rstrip().rstrip("\\") + " " + lines[i].strip()
                    i += 1
                text = re.sub(r"^\s*\$ ", "", line)
                if "$@" in text or "$*" in text:
                    continue  # the arguments are whatever a script was given
                if re.search(r"(^|[\s/|;&(])tzero\s", text):
                    yield rel, start, text.strip(), False
            else:
                for m in re.finditer(r"`(tzero [^`]*)`", line):
                    if "$@" not in m.group(1):
                        yield rel, start, m.group(1), True


VERBOSE = False


def check(tzero, root):
    failures, checked = [], 0
    env = dict(os.environ, TZERO_PARSE_ONLY="1")
    for rel, line, text, fragment in doc_commands(root):
        for tokens in commands_of(text):
            try:
                tree, _ = parse_seq(synopsis_items(tokens), 0, None)
            except ValueError as e:
                failures.append(f"{rel}:{line}: {text}\n    cannot read the synopsis: {e}")
                continue
            forms = [first(tree)] + variants(tree)
            seen = set()
            for form in forms:
                args = concrete(form)
                if tuple(args) in seen:
                    continue
                seen.add(tuple(args))
                checked += 1
                if VERBOSE:
                    print(f"{rel}:{line}: tzero {' '.join(args)}")
                r = subprocess.run([tzero] + args, env=env, stdin=subprocess.DEVNULL,
                                   capture_output=True, text=True, timeout=30)
                err = (r.stderr.strip().splitlines() or [""])[-1]
                ok = r.returncode == 0 or (fragment and r.returncode == 2 and FRAGMENT_OK.search(err))
                if not ok:
                    failures.append(f"{rel}:{line}: {text}\n    as: tzero {' '.join(args)}\n"
                                    f"    exit {r.returncode}: {err}")
    for f in failures:
        print(f)
    print(f"check_doc_commands: {checked} command forms checked, {len(failures)} failed")
    return 1 if failures else 0


def self_test(tzero, root):
    """Plants mistakes in a scratch README and docs/ and must see each one caught."""
    planted = {
        "tzero run -m m.gguf --no-such-flag": "unknown option --no-such-flag",
        "tzero frobnicate -m m.gguf": "unknown command 'frobnicate'",
        "tzero run -m m.gguf [-n N] [--mode deterministic|sloppy]": "'sloppy' is not one of",
        "tzero run [-p TEXT | -f FILE | --bogus-alt X]": "unknown option --bogus-alt",
        "tzero serve --port 8080": "-m/--model is required",
    }
    inline = {"`tzero run --jsn`": "unknown option --jsn"}
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        t = pathlib.Path(tmp)
        (t / "docs").mkdir()
        good = "```sh\ntzero run -m m.gguf -p \"hi\" -n 4 | head\n```\n"
        (t / "README.md").write_text(good)
        if check(tzero, t) != 0:
            print("self-test: a good command was reported")
            ok = False
        for cmd, want in list(planted.items()) + list(inline.items()):
            body = "```sh\n" + cmd + "\n```\n" if not cmd.startswith("`") else "Use " + cmd + ".\n"
            (t / "docs" / "X.md").write_text("# x\n\n" + body)
            r = subprocess.run([sys.executable, __file__, tzero, str(t)], capture_output=True,
                               text=True)
            where = "docs/X.md:4:" if not cmd.startswith("`") else "docs/X.md:3:"
            if r.returncode != 1 or where not in r.stdout or want not in r.stdout:
                print(f"self-test: planted `{cmd}` not caught as '{want}' at {where}:\n{r.stdout}")
                ok = False
            else:
                print(f"self-test: caught {cmd!r}: {want}")
    print("self-test:", "passed" if ok else "FAILED")
    return 0 if ok else 1


def main(argv):
    global VERBOSE
    if argv[:1] == ["-v"]:
        VERBOSE, argv = True, argv[1:]
    if len(argv) == 3 and argv[0] == "--self-test":
        return self_test(argv[1], pathlib.Path(argv[2]))
    if len(argv) == 2:
        return check(argv[0], pathlib.Path(argv[1]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
