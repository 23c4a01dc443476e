#!/usr/bin/env python3
"""Checks that the library's floors only look down.

Sources/Coroutines is built in floors: Runtime at the bottom, Async on it, and Models, IO and
Sync side by side on top. A file may use what its own floor and the floors below declare, never
what a floor above or a sibling declares. This script finds the names each floor declares at
the top level (types, functions, properties) and reports every use of one of them, outside
comments and string literals, from a floor that must not see it. Exit status 1 if any.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "Coroutines")
LEVEL = {"Runtime": 0, "Async": 1, "Models": 2, "IO": 2, "Sync": 2}

DECLARATION = re.compile(
    r"^(?:(?:public|internal|private|fileprivate|package|final|static|nonisolated|indirect"
    r"|@\w+(?:\([^)]*\))?)\s+)*"
    r"(?:class|struct|enum|protocol|actor|typealias|func|var|let)\s+([A-Za-z_]\w*)",
    re.M,
)
MEMBER = re.compile(
    r"^\s*(?:(?:public|internal|private|fileprivate|package|final|static|nonisolated|override"
    r"|mutating|@\w+(?:\([^)]*\))?)\s+)*(?:func|var|let|case)\s+([A-Za-z_]\w*)",
    re.M,
)
LITERAL = re.compile(r'"""(?:.|\n)*?"""|"(?:\\.|[^"\\\n])*"')
COMMENT = re.compile(r"//.*|/\*(?:.|\n)*?\*/")


def code_only(source):
    return COMMENT.sub("", LITERAL.sub('""', source))


def main():
    files = {}
    declared = {}
    own = {floor: set() for floor in LEVEL}
    for floor in LEVEL:
        directory = os.path.join(ROOT, floor)
        for name in sorted(os.listdir(directory)):
            if not name.endswith(".swift"):
                continue
            with open(os.path.join(directory, name)) as handle:
                source = handle.read()
            files[(floor, name)] = code_only(source)
            for match in DECLARATION.finditer(source):
                declared.setdefault(match.group(1), set()).add(floor)
            # A floor's own members may share a name with another floor's function.
            own[floor].update(match.group(1) for match in MEMBER.finditer(source))
    problems = []
    for (floor, name), code in files.items():
        for symbol, floors in declared.items():
            if floor in floors or symbol in own[floor]:
                continue
            visible = any(LEVEL[f] < LEVEL[floor] for f in floors)
            if visible:
                continue
            if re.search(r"(?<![\w.])" + re.escape(symbol) + r"\b", code):
                owner = "/".join(sorted(floors))
                problems.append(f"{floor}/{name} uses {symbol}, declared in {owner}")
    for problem in sorted(problems):
        print(problem)
    if problems:
        print(f"{len(problems)} use(s) of a floor above or beside; see Docs Internals, 'Floors'.")
        return 1
    print("floors: every file uses only its own floor and the floors below")
    return 0


if __name__ == "__main__":
    sys.exit(main())
