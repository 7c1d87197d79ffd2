#!/usr/bin/env python3
"""Checks the layout rules the build relies on (docs/decisions.md, "The layout"):
- a role folder (server, timer, consumer, checker, admin, master) includes no
  other role's folder (the master includes each role's one entry point,
  ROLE/ROLE.h, to fork it);
- common/ has no loose sources: every file is in one group;
- a group of common/ includes only itself and the groups below it, in the
  order its libraries link (core < redis < store < registry < http < alerts);
- common/ includes no role and nothing of client/ (arrows only point into
  common/, never out of it);
File size is not a rule (cohesion first): a production file past ~800 lines
is printed as worth a look, never a failure.
Prints each violation and exits 1 when there is any."""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..')
ROLES = ['server', 'timer', 'consumer', 'checker', 'admin', 'master']
GROUPS = ['core', 'redis', 'store', 'registry', 'http', 'alerts']
PRODUCTION = ROLES + ['common', 'client']
LOOK_AT_LINES = 800
INCLUDE = re.compile(r'#include "([a-z_0-9]+)/([a-z_0-9]+/)?')
ENTRY = re.compile(r'#include "([a-z_0-9]+)/\1\.h"')

problems = []


def sources(folder):
    for root, _, files in os.walk(os.path.join(ROOT, folder)):
        for name in files:
            if name.endswith(('.cc', '.h', '.lua', '.js')):
                yield os.path.join(root, name)


def rel(path):
    return os.path.relpath(path, ROOT)


for role in ROLES:
    for path in sources(role):
        text = open(path, encoding='utf-8').read()
        entries = set(ENTRY.findall(text)) if role == 'master' else set()
        for top, _ in INCLUDE.findall(text):
            if top in ROLES and top != role and top not in entries:
                problems.append(f'{rel(path)}: role {role} includes role {top}')

for name in os.listdir(os.path.join(ROOT, 'common')):
    if os.path.isfile(os.path.join(ROOT, 'common', name)):
        problems.append(f'common/{name}: not in a group of common/')

for rank, group in enumerate(GROUPS):
    for path in sources(os.path.join('common', group)):
        for top, sub in INCLUDE.findall(open(path, encoding='utf-8').read()):
            if top in ROLES or top == 'client':
                problems.append(f'{rel(path)}: common/ includes {top}/, which is above it')
                continue
            if top != 'common':
                continue
            used = sub.rstrip('/')
            if used not in GROUPS:
                problems.append(f'{rel(path)}: includes common/{used}, which is no group')
            elif GROUPS.index(used) > rank:
                problems.append(f'{rel(path)}: {group} uses {used}, which links above it')

for folder in PRODUCTION:
    for path in sources(folder):
        lines = sum(1 for _ in open(path, encoding='utf-8'))
        if lines > LOOK_AT_LINES:
            print(f'note: {rel(path)}: {lines} lines, worth a look (one concern?)')

# Migrations are applied by number: two files of one number would leave one
# of them never applied (branches that each add "the next" number meet).
numbers = {}
for name in sorted(os.listdir(os.path.join(ROOT, 'sql'))):
    match = re.match(r'(\d{3})_.*\.sql$', name)
    if match:
        if match.group(1) in numbers:
            problems.append(f'sql/{name}: migration number {match.group(1)} is also '
                            f'sql/{numbers[match.group(1)]}')
        numbers[match.group(1)] = name

for problem in problems:
    print(problem)
print(f'layout: {len(problems)} problem(s)')
sys.exit(1 if problems else 0)
