"""The dq HTTP API from Python's standard library (docs/client.md).

    client = Client("http://127.0.0.1:6780", token="dqt_...")
    client.add("orders", "order-42", {"amount": 42}, delay=600)
    client.get("orders", "order-42")["state"]
    client.delete("orders", "order-42")

    # A pull worker (a topic of mode pull):
    for job in client.reserve("reports", ttr=60, wait=20, count=10):
        ...
        client.ack(job)

Every call returns the server's JSON answer (a dict); a refusal raises
DqError with the HTTP status and the server's message.
"""
import json
import urllib.error
import urllib.parse
import urllib.request


class DqError(Exception):
    """A call dq refused, or could not answer.

    status:  the HTTP status (0 when no answer came: connection refused, timeout)
    message: the server's {"error": ...} text, or what went wrong on the way
    body:    the server's answer as parsed JSON, when it was JSON
    outcome_unknown: True on 504 (and when no answer came to a write): dq
             cannot tell whether the write happened; retrying the same call
             is safe (the same add answers 200 existing, and "state" says
             how the job ended when it ran already).
    """

    def __init__(self, status, message, body=None, outcome_unknown=False):
        self.status = status
        self.message = message
        self.body = body
        self.outcome_unknown = outcome_unknown or status == 504
        text = "%s: %s" % (status, message) if status else message
        if self.outcome_unknown:
            text += " (outcome unknown: the write may or may not have happened; retrying is safe)"
        super().__init__(text)


class StaleToken(DqError):
    """A worker call (ack, nack, touch) whose lease token is no longer the
    job's: its lease ran out and the job went back (perhaps to another
    worker), or it was acked, deleted or replaced. Nothing was changed."""


def _segment(value):
    return urllib.parse.quote(str(value), safe="")


def _with_times(fields, delay=None, at=None, tz=None, ttl=None, expire_at=None):
    """fields plus the time members given (None: not sent)."""
    for name, value in (("delay", delay), ("at", at), ("tz", tz), ("ttl", ttl),
                        ("expire_at", expire_at)):
        if value is not None:
            fields[name] = value
    return fields


def _after_list(after):
    """[(topic, id)] or [{"topic", "id"}] as the API's "after" list."""
    out = []
    for entry in after:
        if isinstance(entry, dict):
            out.append({"topic": entry["topic"], "id": entry["id"]})
        else:
            topic, job_id = entry
            out.append({"topic": topic, "id": job_id})
    return out


# update()'s default: the body is kept (None would be the JSON null body).
KEEP = object()


class Client:
    """One dq server's HTTP API. base_url: "http://host:port"; token: an API
    token (dqctl token add), sent as "Authorization: Bearer ..."."""

    def __init__(self, base_url, token=None, timeout=10.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    # Jobs.

    def add(self, topic, id, body, delay=None, at=None, tz=None, ttl=None,  # noqa: A002
            expire_at=None, after=None):
        """Adds a job; body is any JSON value. delay: seconds; at: unix
        seconds or a time text (README, *HTTP API*), read in the IANA zone
        tz when it has no offset (else the topic's tz, else the server's);
        neither: the topic's default delay. ttl: seconds after its due time
        it may still be delivered, or expire_at: a time after which it never
        is (neither: the topic's ttl). after: jobs it waits for, as
        [(topic, id)]: it stays "waiting" until each was delivered, then is
        due by its own delay or time. Returns {"topic", "id", "due_at_ms"}
        (+ "existing": True when the same job was pending already)."""
        fields = _with_times({"id": id, "body": body}, delay, at, tz, ttl, expire_at)
        if after:
            fields["after"] = _after_list(after)
        return self._call("POST", "/v1/topics/%s/jobs" % _segment(topic), fields)

    def add_batch(self, topic, jobs):
        """jobs: dicts {"id", "body", "delay"|"at"}. Returns one result per
        job, in order: {"id", "status", "due_at_ms"} or {"id", "status", "error"}."""
        reply = self._call("POST", "/v1/topics/%s/jobs/batch" % _segment(topic), {"jobs": list(jobs)})
        return reply["results"]

    def get(self, topic, id):  # noqa: A002
        """The job: {"topic", "id", "body", "state", "attempts", "due_at_ms", ...};
        gone, while its topic keeps history (keep_done_days): {"topic", "id",
        "state": "done"|"dead"|"expired"|"deleted", "ended_at_ms", ...}."""
        return self._call("GET", "/v1/topics/%s/jobs/%s" % (_segment(topic), _segment(id)))

    def delete(self, topic, id):  # noqa: A002
        """Deletes the job. Returns {"deleted": True, "delivery_in_flight": bool}:
        in flight, its callback was already running and may still complete."""
        reply = self._call("DELETE", "/v1/topics/%s/jobs/%s" % (_segment(topic), _segment(id)))
        return reply or {"deleted": True, "delivery_in_flight": False}

    def update(self, topic, id, body=KEEP, delay=None, at=None, tz=None, ttl=None,  # noqa: A002
               expire_at=None):
        """Changes a pending job in place, in one step: a new body (any JSON
        value) and/or due time (delay seconds, or at as add takes it) and/or
        expiry (ttl or expire_at); what is not given is kept. A delivery already under way still runs with
        the old body; the new version is delivered after it, at its time.
        Returns {"topic", "id", "state", "due_at_ms", "updated": True,
        "previous_state"}, or with "created": True when there was no such
        job and it was added (a body is needed then). A dead letter raises
        DqError 409."""
        fields = {} if body is KEEP else {"body": body}
        _with_times(fields, delay, at, tz, ttl, expire_at)
        return self._call("PUT", "/v1/topics/%s/jobs/%s" % (_segment(topic), _segment(id)), fields)

    def run(self, topic, id):  # noqa: A002
        """Makes a delayed or retrying job due now, its attempts kept. Returns
        {"topic", "id", "state", "due_at_ms", "moved"}: moved False when it was
        due already. A dead letter raises DqError 409 (requeue it)."""
        return self._call("POST", "/v1/topics/%s/jobs/%s/run" % (_segment(topic), _segment(id)))

    def list_jobs(self, topic, state, offset=None, limit=None):
        """Pending jobs in one state (delayed, ready, working, retrying), next due first."""
        return self._call("GET", "/v1/topics/%s/jobs" % _segment(topic),
                          query={"state": state, "offset": offset, "limit": limit})

    # Pull workers (a topic of mode pull).

    def reserve(self, topic, ttr=None, wait=None, count=None):
        """Leases up to count ready jobs for ttr seconds, waiting up to wait
        seconds for one to become ready. Returns a list (empty when none
        came) of {"topic", "id", "body", "attempt", "token", "lease_until_ms",
        ...}; hand each to ack, nack or touch before its lease ends, or it
        is given out again."""
        reply = self._call("GET", "/v1/topics/%s/reserve" % _segment(topic),
                           query={"ttr": ttr, "wait": wait, "count": count},
                           timeout=self.timeout + (wait or 0))
        return reply["jobs"]

    def ack(self, job):
        """The job is done: it ends (delivered). A lease that is no longer
        the job's raises StaleToken."""
        return self._worker_call(job, "ack", {})

    def nack(self, job, delay=None, error=None):
        """The attempt failed: the job is retried after delay seconds (None:
        the topic's backoff), or dead-lettered when its attempts are used up.
        Returns {"topic", "id", "state": "retrying"|"dead", ...}."""
        fields = {} if error is None else {"error": error}
        return self._worker_call(job, "nack", fields, query={"delay": delay})

    def touch(self, job, ttr=None):
        """Extends the lease (by ttr seconds from now). Returns {"topic",
        "id", "lease_until_ms"} and updates job["lease_until_ms"]."""
        fields = {} if ttr is None else {"ttr": ttr}
        reply = self._worker_call(job, "touch", fields)
        if isinstance(reply, dict) and "lease_until_ms" in reply:
            job["lease_until_ms"] = reply["lease_until_ms"]
        return reply

    def work(self, topic, handler, ttr=30, wait=20, max_jobs=None):
        """Runs handler(job) for each job of the topic, one at a time: acks
        when it returns, nacks (the topic's backoff, the exception as error)
        when it raises. Stops after max_jobs jobs (None: never). Returns how
        many jobs were handled. Keep handler shorter than ttr, or touch."""
        handled = 0
        while max_jobs is None or handled < max_jobs:
            for job in self.reserve(topic, ttr=ttr, wait=wait, count=1):
                try:
                    handler(job)
                except Exception as error:  # pylint: disable=broad-except
                    try:
                        self.nack(job, error="%s: %s" % (type(error).__name__, error))
                    except StaleToken:
                        pass
                else:
                    try:
                        self.ack(job)
                    except StaleToken:
                        pass  # its lease ran out: it is given out again
                handled += 1
        return handled

    def _worker_call(self, job, verb, fields, query=None):
        fields = dict(fields, token=job["token"])
        path = "/v1/topics/%s/jobs/%s/%s" % (_segment(job["topic"]), _segment(job["id"]), verb)
        try:
            return self._call("POST", path, fields, query=query)
        except DqError as error:
            if error.status == 409:
                raise StaleToken(error.status, error.message, error.body) from None
            raise

    # Topics.

    def list_topics(self, search=None, offset=None, limit=None):
        """{"total", "topics": [{"name", "online", "now"}], ...}."""
        return self._call("GET", "/v1/topics", query={"search": search, "offset": offset, "limit": limit})

    def get_topic(self, topic):
        """A topic's settings (docs/registry.md); signing secrets masked."""
        return self._call("GET", "/v1/topics/%s" % _segment(topic))

    def put_topic(self, topic, fields, if_version=None, create_only=False):
        """Creates the topic, or sets every field (absent ones to their
        defaults; signing keys stay unless named). create_only: refused (409)
        when it exists. if_version: refused (409) when it changed since."""
        headers = {"If-None-Match": "*"} if create_only else {}
        if if_version is not None:
            headers["If-Match"] = '"%d"' % if_version
        return self._call("PUT", "/v1/topics/%s" % _segment(topic), dict(fields), headers=headers)

    def patch_topic(self, topic, fields, if_version=None):
        """Changes the fields given ({"online": False} pauses delivery)."""
        headers = {"If-Match": '"%d"' % if_version} if if_version is not None else {}
        return self._call("PATCH", "/v1/topics/%s" % _segment(topic), dict(fields), headers=headers)

    def delete_topic(self, topic, purge=False):
        """Deletes the topic; refused (409) while it holds jobs unless purge."""
        return self._call("DELETE", "/v1/topics/%s" % _segment(topic),
                          query={"purge": "true" if purge else None})

    def topic_stats(self, topic):
        return self._call("GET", "/v1/topics/%s/stats" % _segment(topic))

    # Schedules (docs/schedules.md): the writes need the admin scope.

    def list_schedules(self, topic):
        """[{"spec", "id", "tz", "zone", "body", "catch_up", "paused", "next_runs", ...}]."""
        return self._call("GET", "/v1/topics/%s/schedules" % _segment(topic))["schedules"]

    def add_schedule(self, topic, spec, tz=None, body=None, catch_up=None, paused=None):
        """Adds a schedule: spec is five cron fields, @hourly..., or "@every 10s";
        body a JSON value, or JSON text with {{tick}} / {{tick_ms}} in it.
        409 when the topic has that spec already. Answers the schedule."""
        fields = {"spec": spec}
        for name, value in (("tz", tz), ("body", body), ("catch_up", catch_up), ("paused", paused)):
            if value is not None:
                fields[name] = value
        return self._call("POST", "/v1/topics/%s/schedules" % _segment(topic), fields)

    def pause_schedule(self, topic, spec, paused=True):
        """Pauses (no tick is added) or, with paused=False, resumes it."""
        return self._call("PATCH", "/v1/topics/%s/schedules" % _segment(topic),
                          {"spec": spec, "paused": paused})

    def delete_schedule(self, topic, spec):
        """{"deleted": spec, "id"}."""
        return self._call("DELETE", "/v1/topics/%s/schedules" % _segment(topic), query={"spec": spec})

    # Dead letters.

    def list_dead(self, topic, offset=None, limit=None):
        return self._call("GET", "/v1/topics/%s/dead" % _segment(topic),
                          query={"offset": offset, "limit": limit})

    def requeue_dead(self, topic, id=None):  # noqa: A002
        """Requeues one dead letter, or all of the topic's without id."""
        path = "/v1/topics/%s/dead" % _segment(topic)
        path += "/%s/requeue" % _segment(id) if id is not None else "/requeue"
        return self._call("POST", path)

    def purge_dead(self, topic):
        return self._call("DELETE", "/v1/topics/%s/dead" % _segment(topic))

    # Operations.

    def signing_keys(self, topic=None):
        """The Ed25519 public keys receivers verify with: [{"topic", "key_id", "public_key", ...}]."""
        return self._call("GET", "/v1/signing-keys", query={"topic": topic})["keys"]

    def health(self):
        """/healthz's answer (a 503 is answered too: {"status": "unavailable", ...})."""
        try:
            return self._call("GET", "/healthz")
        except DqError as error:
            if error.status == 503 and isinstance(error.body, dict):
                return error.body
            raise

    def _call(self, method, path, payload=None, query=None, headers=None, timeout=None):
        if query:
            pairs = [(key, value) for key, value in query.items() if value is not None]
            if pairs:
                path += "?" + urllib.parse.urlencode(pairs)
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", "Bearer " + self.token)
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as answer:
                text = answer.read()
                return json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            text = error.read()
            try:
                body = json.loads(text)
            except ValueError:
                body = None
            message = body.get("error") if isinstance(body, dict) else None
            raise DqError(error.code, message or text.decode("utf-8", "replace") or error.reason,
                          body) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            # A write whose answer never came may have happened.
            unsure = method != "GET" and "timed out" in str(reason)
            raise DqError(0, "%s: %s" % (self.base_url, reason), outcome_unknown=unsure) from None
