#!/usr/bin/env python3
"""check_references.py must fail on each kind of broken citation and pass on
good ones: a small tree is written to a temp folder and checked."""
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check_references.py')
GOOD = {
    'docs/guide.md': '# Guide\n\n## Caps per topic\n\n- **One copy per id, always.** text\n',
    'tests/test_x.cc': 'TEST_CASE("a shard killed: nothing lost") {}\n',
    'common/store/keys.h': '// docs/guide.md, *Caps per topic*; docs/guide.md, "One copy per id".\n'
                           '// tests/test_x.cc "a shard killed: nothing lost"\n',
}
BAD = [
    ('common/a.h', '// see common/store/gone.h\n', 'common/store/gone.h'),
    ('common/b.h', '// docs/guide.md, *Caps per\n// host*\n', 'Caps per host'),
    ('common/c.h', '// docs/missing.md\n', 'docs/missing.md'),
    ('common/d.h', '// tests/test_x.cc "a shard killed: nothing lost" and "no such case"\n',
     'no such case'),
]


def run(tree):
    with tempfile.TemporaryDirectory() as root:
        for path, text in tree.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), 'w', encoding='utf-8') as out:
                out.write(text)
        done = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)
        return done.returncode, done.stdout


code, out = run(GOOD)
if code != 0:
    sys.exit(f'good citations were refused:\n{out}')
for path, text, named in BAD:
    code, out = run({**GOOD, path: text})
    if code != 1 or named not in out:
        sys.exit(f'a broken citation ({named}) was not reported: exit {code}\n{out}')
print('check_references: every broken citation reported, good ones passed')
