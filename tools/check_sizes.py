#!/usr/bin/env python3
"""Size limits of the source tree (issue 37): no C++ source over MAX_FILE_LINES lines and no function
over MAX_FUNCTION_LINES lines.

Usage: check_sizes.py [ROOT] [--max-file N] [--max-function N]   (ROOT: default, this repository)
Prints one line per violation ("FILE: N lines" or "FILE:LINE: function NAME is N lines") and exits 1
if there is any; prints "sizes: ok (...)" and exits 0 otherwise. Standard library only, so any
python3 runs it.

What counts:
- Files: *.cpp, *.hpp, *.h, *.cc under the tree, tests included. Exempt: CUDA kernels (*.cu, *.cuh),
  generated tables (a file whose first 5 lines say "generated"), build folders and hidden folders.
- Functions: every function body at namespace or class scope, from the line its signature starts on
  to the line of its closing brace (a Catch2 TEST_CASE / SECTION-free body counts as a function too);
  a lambda or local class inside a function counts toward the enclosing function. The scan strips
  comments, string and character literals (raw strings included) and preprocessor lines, then
  matches braces: it is a lexical check, not a parser, and errs toward counting a scope as a
  function when its head has parentheses.
"""
import os
import re
import sys

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 120
SOURCE_EXT = (".cpp", ".hpp", ".h", ".cc")
EXEMPT_EXT = (".cu", ".cuh")
SKIP_DIRS = re.compile(r"^(build.*|\..*|corpus)$")
CONTAINER = re.compile(r"\b(namespace|class|struct|union|enum)\b")
CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|do|else|try)\b")


def strip_code(text):
    """Returns text with comments, literals and preprocessor lines blanked, newlines kept."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#" or (at_line_start and c in " \t" and text[i:].lstrip(" \t").startswith("#")):
            # A preprocessor line, with its backslash continuations.
            j = i
            while j < n:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                if k > 0 and text[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            out.append("\n" * text.count("\n", i, k))
            i = k
            continue
        if text.startswith("//", i):
            k = text.find("\n", i)
            i = n if k < 0 else k
            continue
        if text.startswith("/*", i):
            k = text.find("*/", i + 2)
            k = n if k < 0 else k + 2
            out.append("\n" * text.count("\n", i, k))
            i = k
            continue
        m = re.match(r'(u8|u|U|L)?R"([^(\s]{0,16})\(', text[i:i + 24])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + m.group(2) + '"'
            k = text.find(close, i + m.end())
            k = n if k < 0 else k + len(close)
            out.append('""' + "\n" * text.count("\n", i, k))
            i = k
            continue
        if c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            # A string or character literal (a digit separator such as 1'000 is not one).
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        at_line_start = c == "\n" or (at_line_start and c in " \t")
        i += 1
    return "".join(out)


def long_functions(text, limit):
    """Yields (line, name, length) for each function body longer than `limit` lines."""
    code = strip_code(text)
    stack = []  # per open brace: "container", "function" or "block"
    head_start = 0  # where the current statement's head began (after the last ; { or })
    starts = [0]  # the offset of each line's first character
    for k, ch in enumerate(code):
        if ch == "\n":
            starts.append(k + 1)

    def line_of(offset):
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    function_open = None  # (start offset of its head, name) of the outermost open function
    for k, ch in enumerate(code):
        if ch == ";":
            if "function" not in stack:
                head_start = k + 1
        elif ch == "{":
            if "function" in stack:
                stack.append("block")
                continue
            head = code[head_start:k]
            stripped = head.strip()
            kind = "block"
            if "(" in stripped and ")" in stripped and not CONTROL.match(stripped) and not re.search(r"=\s*$", stripped):
                # `struct S : Base<f(x)>` is rare; a head with a container keyword before any
                # parenthesis is a container.
                before_paren = stripped.split("(", 1)[0]
                kind = "container" if CONTAINER.search(before_paren) and not re.search(r"\)\s*$", stripped) else "function"
            elif CONTAINER.search(stripped) or stripped.startswith("extern"):
                kind = "container"
            stack.append(kind)
            if kind == "function":
                lead = len(head) - len(head.lstrip())
                name_match = re.search(r"([~\w:<>]+)\s*\(", stripped)
                function_open = (head_start + lead, name_match.group(1) if name_match else stripped[:40])
            head_start = k + 1
        elif ch == "}":
            kind = stack.pop() if stack else "block"
            if kind == "function" and "function" not in stack and function_open:
                first = line_of(function_open[0])
                last = line_of(k)
                if last - first + 1 > limit:
                    yield first, function_open[1], last - first + 1
                function_open = None
            if "function" not in stack:
                head_start = k + 1


def main(argv):
    root = None
    max_file, max_function = MAX_FILE_LINES, MAX_FUNCTION_LINES
    args = iter(argv[1:])
    for a in args:
        if a == "--max-file":
            max_file = int(next(args))
        elif a == "--max-function":
            max_function = int(next(args))
        elif root is None:
            root = a
        else:
            print(f"check_sizes: unexpected argument {a}", file=sys.stderr)
            return 2
    root = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(root):
        print(f"check_sizes: {root} is not a folder", file=sys.stderr)
        return 2
    problems = files = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not SKIP_DIRS.match(d))
        for name in sorted(filenames):
            if not name.endswith(SOURCE_EXT) or name.endswith(EXEMPT_EXT):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            if "generated" in "".join(text.splitlines(True)[:5]).lower():
                continue
            files += 1
            lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            if lines > max_file:
                print(f"{rel}: {lines} lines (limit {max_file})")
                problems += 1
            for line, fname, length in long_functions(text, max_function):
                print(f"{rel}:{line}: function {fname} is {length} lines (limit {max_function})")
                problems += 1
    if problems:
        print(f"sizes: {problems} violation(s) in {files} files")
        return 1
    print(f"sizes: ok ({files} files, none over {max_file} lines, no function over {max_function} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
