#!/usr/bin/env python3
"""Fails when a doc or a comment cites something that does not exist:
- a file or folder of the repository (`common/store/keys.h`, `checker/shard_mover`,
  `docs/scaling.md`): it must exist (a name without extension may be a .h,
  .cc, .lua or .py file or a folder);
- a section of a doc (`docs/delivery.md, *Caps per topic*` or
  `docs/decisions.md, "One copy per id"`, also across a comment's line
  break): the quoted text must begin a heading of that doc or a bold lead
  (`**One copy per id, whatever is down**`);
- a numbered section (`docs/BENCHMARKS.md, section 7`): a heading numbered so;
- a test case (`tests/test_flow.cc` "one shard of two stalled"): the quoted
  text must begin a TEST_CASE or SUBCASE name of that file.
Reads README.md, docs/*.md, every source file (comments and strings alike)
and the scripts of tests/, bench/, fuzz/, .ci/ and packaging/. Prints each
broken citation as file:line and exits 1 when there is any."""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), '..', '..'))
TOPS = ['common', 'server', 'timer', 'consumer', 'checker', 'admin', 'master', 'client',
        'clients', 'tests', 'bench', 'fuzz', 'docs', 'sql', 'conf', 'packaging', 'cmake']
SOURCE_EXT = ('.cc', '.h', '.lua', '.py', '.sh', '.md', '.js', '.mjs', '.cmake', '.txt', '.ini',
              '.sql', '.html', '.css', '.json', '.yaml')
SKIP_DIRS = {'.git', 'node_modules', '__pycache__', 'corpus'}
PATH = re.compile(r'(?<![\w./-])((?:' + '|'.join(TOPS) +
                  r')/[A-Za-z0-9_./-]*[A-Za-z0-9_])')
# A citation of a section: the doc, a comma or space, then *Title* or "Title".
SECTION = re.compile(r'(docs/[A-Za-z0-9_-]+\.md)\)?`?,?\s*\(?(?:\*([^*]{3,120})\*|"([^"(){};]{3,120})")')
NUMBERED = re.compile(r'(docs/[A-Za-z0-9_-]+\.md)`?,?\s*(?:section|§)\s*(\d+)')
TEST_CASE = re.compile(r'(tests/[A-Za-z0-9_/]+\.cc)`?\)?,?\s*\(?"([^"]{5,200})"')
NEXT_CASE = re.compile(r'\s*(?:,|;|and|or)\s*(?:and\s+)?"([^"]{5,200})"')
CASE_NAME = re.compile(r'(?:TEST_CASE|SUBCASE)\s*\(\s*"((?:[^"\\]|\\.)*)"')
HEADING = re.compile(r'^#+\s+(.*?)\s*$', re.M)
BOLD = re.compile(r'\*\*(.+?)\*\*', re.S)
GENERATED = re.compile(r'^(build[^/]*|\.git)/')
# A placeholder, not a file: `tests/test_*`, `sql/NNN_name.sql`, `cmd_NAME.cc`,
# `fuzz/crash-<name>` (what a run writes), `sql/007_what.sql` (an example).
PLACEHOLDER = re.compile(r'(_$|/[A-Z]{2,}\b|_[A-Z]{3,}|NNN|fuzz/crash|_what\.)')


def generated_files():
    """Files the build generates (CMake OUTPUT lines): cited by their source path."""
    found = set()
    cmake_dir = os.path.join(ROOT, 'cmake')
    build_files = ['CMakeLists.txt'] + ([os.path.join('cmake', f) for f in os.listdir(cmake_dir)]
                                        if os.path.isdir(cmake_dir) else [])
    for build_file in build_files:
        if not os.path.isfile(os.path.join(ROOT, build_file)):
            continue
        text = open(os.path.join(ROOT, build_file), encoding='utf-8').read()
        found.update(re.findall(r'GENERATED_DIR\}/([A-Za-z0-9_/.]+)', text))
    return found


GENERATED_FILES = generated_files()


def files():
    for root, dirs, names in os.walk(ROOT):
        rel_root = os.path.relpath(root, ROOT)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and
                   not (rel_root == '.' and (d.startswith('build') or d.startswith('.') and d != '.ci'))]
        for name in names:
            if name.endswith(SOURCE_EXT) or rel_root == '.ci' or name == 'run':
                path = os.path.join(root, name)
                yield os.path.relpath(path, ROOT)


def flatten(text, path):
    """The text with comment markers at line starts removed and lines joined,
    so a citation broken over two comment lines reads whole; returns the text
    and, for each character, its line number."""
    out, lines = [], []
    for number, line in enumerate(text.split('\n'), 1):
        stripped = re.sub(r'^\s*(//+|#+(?!#*\s*\w+\s*$)|--+|\*(?!\*)|;+)\s?', '', line)
        if not path.endswith('.md'):
            line = stripped
        out.append(line + ' ')
        lines.extend([number] * (len(line) + 1))
    return ''.join(out), lines


def norm(text):
    text = re.sub(r'[`*_]', '', text)
    return re.sub(r'\s+', ' ', text).strip().lower()


doc_titles = {}


def titles_of(doc):
    if doc not in doc_titles:
        path = os.path.join(ROOT, doc)
        if not os.path.isfile(path):
            doc_titles[doc] = None
        else:
            text = open(path, encoding='utf-8').read()
            found = [norm(t) for t in HEADING.findall(text)] + [norm(t) for t in BOLD.findall(text)]
            # "### 9. Signing a callback" is cited as "Signing a callback" too,
            # and a table's first cell names its row.
            found += [re.sub(r'^\d+[.)]\s*', '', t) for t in found]
            found += [norm(cell) for cell in re.findall(r'^\|\s*([^|]+?)\s*\|', text, re.M)]
            doc_titles[doc] = found
    return doc_titles[doc]


case_names = {}


def cases_of(test_file):
    if test_file not in case_names:
        path = os.path.join(ROOT, test_file)
        if not os.path.isfile(path):
            case_names[test_file] = None
        else:
            text = open(path, encoding='utf-8').read()
            # Adjacent string literals ("a " "b") are one name.
            text = re.sub(r'"\s*\n\s*"', '', text)
            case_names[test_file] = [norm(n.replace('\\"', '"')) for n in CASE_NAME.findall(text)]
    return case_names[test_file]


def path_exists(cited):
    cited = cited.rstrip('.')
    if GENERATED.match(cited) or PLACEHOLDER.search(cited) or cited in GENERATED_FILES:
        return True
    if any(ch in cited for ch in '*{}<>'):
        return True  # a pattern, not a file
    full = os.path.join(ROOT, cited)
    if os.path.exists(full):
        return True
    return any(os.path.exists(full + ext) for ext in ('.h', '.cc', '.lua', '.py', '.sh', '.md'))


problems = []
for rel in sorted(files()):
    if rel.startswith('tests/layout/check_references'):  # the check and its fixtures
        continue
    try:
        text = open(os.path.join(ROOT, rel), encoding='utf-8').read()
    except (UnicodeDecodeError, OSError):
        continue
    flat, line_of = flatten(text, rel)

    def where(offset):
        return f'{rel}:{line_of[min(offset, len(line_of) - 1)]}'

    for match in PATH.finditer(flat):
        cited = match.group(1)
        # "tests/" alone, a URL path (/v1/...), or a relative path in a build folder
        before = flat[max(0, match.start() - 8):match.start()]
        if cited.count('/') == 0 or '://' in before or before.endswith(('/proc/', '$')):
            continue
        if not path_exists(cited):
            problems.append(f'{where(match.start())}: cites {cited}, which does not exist')
    for match in SECTION.finditer(flat):
        doc, title = match.group(1), match.group(2) or match.group(3)
        titles = titles_of(doc)
        if titles is None:
            continue  # reported as a missing file above
        wanted = norm(title)
        if not any(t.startswith(wanted) or wanted.startswith(t) and len(t) > 8 for t in titles):
            problems.append(f'{where(match.start())}: cites section "{title}" of {doc}, which has none')
    for match in NUMBERED.finditer(flat):
        doc, number = match.groups()
        titles = titles_of(doc)
        if titles is not None and not any(re.match(number + r'[.)\s]', t) for t in titles):
            problems.append(f'{where(match.start())}: cites section {number} of {doc}, which has none')
    for match in TEST_CASE.finditer(flat):
        test_file, name = match.groups()
        names = cases_of(test_file)
        if names is None:
            continue
        # "case one", "case two" and "case three": every name of the list.
        cited = [(match.start(), name)]
        rest = match.end()
        while True:
            more = NEXT_CASE.match(flat, rest)
            if not more:
                break
            cited.append((more.start(1), more.group(1)))
            rest = more.end()
        for offset, one in cited:
            wanted = norm(one).rstrip('.… ')
            if not any(n.startswith(wanted) or wanted.startswith(n) for n in names):
                problems.append(f'{where(offset)}: cites test case "{one}" of {test_file}, '
                                'which has none')

for problem in problems:
    print(problem)
sys.exit(1 if problems else 0)
