#!/ usr / bin / python3
"""Independent answers for dq's time rules (tests/test_time_zone.cc,
tests/test_cron_spec.cc): Python's zoneinfo over the same system tz database,
and Debian's python3-croniter. Run with Debian's /usr/bin/python3 (it has
croniter); reads one JSON request on stdin, writes one JSON answer on stdout.

Request keys (each optional):
  "walls":    [[zone, "YYYY-MM-DD HH:MM:SS"], ...] -> epoch seconds, fold=0
              (a repeated wall time: its first occurrence; a skipped one: read
              with the offset before the gap)
  "instants": [[zone, epoch_s], ...] -> "YYYY-MM-DD HH:MM:SS" on that zone's clock
  "crons":    [{"spec", "zone", "after", "count", "horizon_minutes"}, ...] ->
              {"croniter": croniter's next `count` ticks after `after`,
               "rule": the documented rule by brute force: every wall minute
               from 3 h before `after` for horizon_minutes that croniter.match
               accepts ticks at its fold=0 instant;
  ticks on one instant are one}
"""
import json
import sys
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter


def wall_to_epoch(zone, text):
    return int(datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone), fold=0).timestamp())


def epoch_to_wall(zone, seconds):
    return datetime.fromtimestamp(seconds, ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M:%S")


def vixie_day_or(spec):
    # Vixie cron: day-of-month OR day-of-week only when neither starts with '*'.
    fields = spec.split()
    return len(fields) != 5 or not (fields[2].startswith("*") or fields[4].startswith("*"))


def fields_matcher(spec):
    """A test of a naive wall datetime against croniter's reading of the
    fields (croniter.expanded) with Vixie's day rule."""
    minutes, hours, month_days, months, week_days = croniter(spec).expanded
    day_or = vixie_day_or(spec)

    def allows(values, value):
        return values == ["*"] or value in values

    def day_matches(wall):
        by_month_day = allows(month_days, wall.day)
        by_week_day = allows(week_days, wall.isoweekday() % 7)
        day = (by_month_day or by_week_day) if day_or else (by_month_day and by_week_day)
        return day and allows(months, wall.month)

    def matches(wall):
        return day_matches(wall) and allows(hours, wall.hour) and allows(minutes, wall.minute)

    return day_matches, matches


def croniter_next(spec, zone, after, count):
    start = datetime.fromtimestamp(after, ZoneInfo(zone))
    ticks = croniter(spec, start, day_or=vixie_day_or(spec))
    return [int(ticks.get_next(datetime).timestamp()) for _ in range(count)]


def cron_case(spec, zone, after, count, horizon_minutes):
    tz = ZoneInfo(zone)
    day_matches, matches = fields_matcher(spec)
    # The rule by brute force: every wall minute from 3 h before `after` on
    # (of the days that match).
    start = datetime.fromtimestamp(after, tz).replace(tzinfo=None, second=0, microsecond=0)
    start -= timedelta(hours=3)
    end = start + timedelta(minutes=horizon_minutes)
    ticks = set()
    skipped_ticks = set()  # where a wall time the clock jumped over ticks
    day = start.replace(hour=0, minute=0)
    while day < end:
        if day_matches(day):
            for minute in range(1440):
                wall = day + timedelta(minutes=minute)
                if start <= wall < end and matches(wall):
                    tick = int(wall.replace(tzinfo=tz, fold=0).timestamp())
                    ticks.add(tick)
                    if datetime.fromtimestamp(tick, tz).replace(tzinfo=None) != wall:
                        skipped_ticks.add(tick)
        day += timedelta(days=1)
    rule = sorted(t for t in ticks if t > after)
    if len(rule) < count:
        raise SystemExit(f"horizon too short for {spec} in {zone}: {len(rule)} of {count}")
    # croniter's own answer, and where it contradicts its spec: a tick at a
    # wall time the fields do not name (nor a skipped one that moved there),
    # or a tick not after the one before.
    theirs = croniter_next(spec, zone, after, count)
    off_spec = [t for t in theirs
                if not matches(datetime.fromtimestamp(t, tz).replace(tzinfo=None))
                and t not in skipped_ticks]
    not_after = [b for a, b in zip([after] + theirs, theirs) if b <= a]
    # ... or a tick it leaves out before its last one, whose wall time the
    # clock shows once (or jumped over): no rule about repeated hours leaves
    # those out.
    def shown_once(tick):
        wall = datetime.fromtimestamp(tick, tz).replace(tzinfo=None)
        return wall.replace(tzinfo=tz, fold=0).timestamp() == wall.replace(tzinfo=tz,
                                                                            fold=1).timestamp()
    missed = [t for t in rule if t < max(theirs) and t not in theirs
              and (t in skipped_ticks or shown_once(t))]
    return {"rule": rule[:count], "croniter": theirs, "croniter_off_spec": len(off_spec),
            "croniter_not_after": len(not_after), "croniter_missed": len(missed)}


def main():
    request = json.load(sys.stdin)
    answer = {
        "walls": [wall_to_epoch(zone, text) for zone, text in request.get("walls", [])],
        "instants": [epoch_to_wall(zone, s) for zone, s in request.get("instants", [])],
        "crons": [cron_case(c["spec"], c["zone"], c["after"], c["count"], c["horizon_minutes"])
                  for c in request.get("crons", [])],
    }
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
