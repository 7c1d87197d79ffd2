#!/usr/bin/python3
"""The admin page end to end in real headless Chromium (Debian's chromium,
chromium-driver and python3-selenium): a real redis-server, a real dqd with
its timer, consumer, checker and dq-admin, and a real callback HTTP server.

Logs in, registers a topic in the page, adds a job through the HTTP API,
finds it in the pending list and by lookup, watches it fail into the dead
letters (callback answers 500, max attempts 1), requeues it (callback now
answers 200), sees it delivered and counted on the dashboard, and checks the
dashboard's numbers against the HTTP API's, and finds the failed endpoint's
circuit (closed again) on the dashboard. A second topic made in the page
with a delivery window closed now (a bad window refused beside its field)
holds its job, and the lookup says why. A creator and a job body holding
<script>alert(1)</script> are shown as text and no alert fires. Saves a
screenshot of every page under <build>/admin-screenshots/.

Fails (never skips) when chromium or chromedriver is missing.

usage: admin_e2e.py BUILD_DIR
"""
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.chrome.service import Service

SCRIPT = "<script>alert(1)</script>"
PASSWORD = "browser test password"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, timeout=20.0, every=0.2):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = check()
            if last:
                return last
        except Exception as error:  # the page may be between two draws
            last = error
        time.sleep(every)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


class Callback(http.server.BaseHTTPRequestHandler):
    status = 500
    calls = []

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        Callback.calls.append((self.headers.get("X-DQ-Id"), Callback.status, body))
        self.send_response(Callback.status)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"callback says %d" % Callback.status)

    do_POST = answer
    do_GET = answer

    def log_message(self, *args):
        pass


def http_json(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def main():
    build = os.path.abspath(sys.argv[1])
    for program in ("chromium", "chromedriver", "redis-server"):
        if shutil.which(program) is None:
            raise SystemExit("FAIL: %s is not installed (apt-get install chromium chromium-driver)" % program)
    shots = os.path.join(build, "admin-screenshots")
    os.makedirs(shots, exist_ok=True)
    work = tempfile.mkdtemp(prefix="dq-admin-browser-")
    processes = []
    driver = None
    try:
        redis_port = free_port()
        redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                                  "--dir", work, "--appendonly", "yes", "--save", ""],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append(redis)

        callback = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Callback)
        threading.Thread(target=callback.serve_forever, daemon=True).start()
        callback_url = "http://127.0.0.1:%d/orders" % callback.server_address[1]

        api_port, admin_port = free_port(), free_port()
        with open(os.path.join(work, "admin-password"), "w") as f:
            f.write(PASSWORD + "\n")
        with open(os.path.join(work, "dq.ini"), "w") as f:
            f.write("[server]\nlisten = 127.0.0.1:%d\nlegacy_listen =\n" % api_port)
            f.write("[redis]\nshards = 127.0.0.1:%d\nstart_local = no\n" % redis_port)
            f.write("[sqlite]\npath = dq.db\n[log]\ndir = log\n")
            f.write("[delivery]\nbackoff_unit_ms = 200\n[timer]\nprocesses = 1\n")
            f.write("[consumer]\nprocesses = 1\n[checker]\ninterval_ms = 200\n")
            f.write("[master]\npid_file = dqd.pid\nregistry_refresh_ms = 200\n")
            f.write("[admin]\nlisten = 127.0.0.1:%d\nuser = admin\npassword_file = admin-password\n" % admin_port)
        dqd = subprocess.Popen([os.path.join(build, "dqd"), "-c", os.path.join(work, "dq.ini")],
                               stdout=open(os.path.join(work, "dqd.out"), "w"), stderr=subprocess.STDOUT)
        processes.append(dqd)
        api = "http://127.0.0.1:%d" % api_port
        admin = "http://127.0.0.1:%d" % admin_port
        wait_for("dqd", lambda: http_json("GET", api + "/healthz")[0] == 200)
        wait_for("dq-admin", lambda: urllib.request.urlopen(admin + "/login", timeout=2).status == 200)

        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium")
        for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1280,900", "--user-data-dir=" + os.path.join(work, "chrome")):
            options.add_argument(argument)
        options.set_capability("unhandledPromptBehavior", "ignore")
        driver = webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver")),
                                  options=options)
        driver.set_window_size(1280, 900)

        def no_alert():
            try:
                text = driver.switch_to.alert.text
            except NoAlertPresentException:
                return
            raise AssertionError("an alert fired: %r" % text)

        def shot(name):
            no_alert()
            driver.save_screenshot(os.path.join(shots, name + ".png"))

        def open_page(path, ready):
            driver.get(admin + path)
            wait_for(path + " drawn", lambda: driver.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == ready)

        def css(selector):
            return driver.find_element(By.CSS_SELECTOR, selector)

        # Without a session: the login page.
        driver.get(admin + "/topics")
        wait_for("redirect to /login", lambda: driver.current_url.endswith("/login"))
        shot("login")
        css("#user").send_keys("admin")
        css("#password").send_keys("wrong password")
        css("#login-button").click()
        wait_for("login error", lambda: "wrong" in css("#login-error").text)
        css("#password").clear()
        css("#password").send_keys(PASSWORD)
        css("#login-button").click()
        wait_for("dashboard", lambda: driver.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "dashboard")

        # Register the topic in the page: offline first, so the job waits in
        # the pending list; max attempts 1; a creator holding a script.
        open_page("/topics", "topics")
        css("#new-topic").click()
        css("#field-name").send_keys("orders")
        css("#field-callback_url").send_keys("ftp://nowhere/")
        css("#topic-save").click()
        wait_for("validation message beside the URL",
                 lambda: css("[data-error-for=callback_url]").text.startswith("callback_url"))
        shot("topic-form")
        css("#field-callback_url").clear()
        css("#field-callback_url").send_keys(callback_url)
        css("#field-max_attempts").clear()
        css("#field-max_attempts").send_keys("1")
        css("#field-creator").clear()
        css("#field-creator").send_keys(SCRIPT)
        css("#field-online").click()  # offline
        css("#topic-save").click()
        wait_for("topic row", lambda: css("tr[data-topic=orders] .topic-creator").text == SCRIPT)
        assert not driver.find_elements(By.CSS_SELECTOR, "#topics-body script"), "a script element was built from data"
        css("tr[data-topic=orders] .test-callback").click()
        wait_for("test callback result", lambda: "HTTP 500" in css("tr[data-topic=orders] .test-result").text)
        # A schedule (added through the HTTP API) listed with its next five runs.
        status, added = http_json("POST", api + "/v1/topics/orders/schedules",
                                  {"spec": "0 3 * * *", "tz": "Europe/Paris"})
        assert status == 201, (status, added)
        css("tr[data-topic=orders] .show-schedules").click()
        wait_for("the schedule's next runs",
                 lambda: len(driver.find_elements(By.CSS_SELECTOR, "tr[data-topic=orders] .next-runs div")) == 5)
        assert css("tr[data-topic=orders] table.schedules td.mono").text == "0 3 * * *"
        assert css("tr[data-topic=orders] .next-runs div").text == added["next_runs"][0]
        shot("topics")

        # A job through the HTTP API, with a body holding a script.
        status, added = http_json("POST", api + "/v1/topics/orders/jobs",
                                  {"id": "order-42", "body": {"note": SCRIPT}, "delay": 0})
        if status == 404:  # the server's topic cache refreshes every 200 ms
            time.sleep(0.5)
            status, added = http_json("POST", api + "/v1/topics/orders/jobs",
                                      {"id": "order-42", "body": {"note": SCRIPT}, "delay": 0})
        assert status == 201, (status, added)

        # Pending list (the timer makes it ready; the offline topic keeps it).
        open_page("/jobs?topic=orders", "jobs")

        def listed():
            for state in ("ready", "delayed"):
                css("#state-tabs button[data-state=%s]" % state).click()
                time.sleep(0.3)
                if driver.find_elements(By.CSS_SELECTOR, "#jobs-body tr[data-job=order-42]"):
                    return state
            return None
        wait_for("order-42 in the pending list", listed)
        shot("jobs")
        css("#lookup-id").send_keys("order-42")
        css("#lookup-button").click()
        wait_for("lookup", lambda: SCRIPT in css("#job-body").text)
        assert not driver.find_elements(By.CSS_SELECTOR, "#job-details script")
        shot("job-lookup")

        # Run now: a job due in an hour, looked up and run from the page, is
        # due at once (the offline topic keeps it); then deleted.
        status, added = http_json("POST", api + "/v1/topics/orders/jobs",
                                  {"id": "order-43", "body": 1, "delay": 3600})
        assert status == 201, (status, added)
        # Search by id prefix in the pending list; the state tabs show counts.
        css("#state-tabs button[data-state=delayed]").click()
        css("#jobs-id-prefix").send_keys("order-43")
        css("#jobs-search-button").click()

        def searched():
            rows = [row.get_attribute("data-job")
                    for row in driver.find_elements(By.CSS_SELECTOR, "#jobs-body tr[data-job]")]
            return rows == ["order-43"] and "1 delayed job(s)" in css("#jobs-message").text
        wait_for("order-43 found by its id prefix, alone", searched)
        delayed_tab = css("#state-tabs button[data-state=delayed]")
        assert int(delayed_tab.get_attribute("data-count")) >= 1, delayed_tab.text
        assert "(" in delayed_tab.text, delayed_tab.text
        shot("jobs-search")
        css("#lookup-id").clear()
        css("#lookup-id").send_keys("order-43")
        css("#lookup-button").click()
        wait_for("order-43 looked up", lambda: css("#lookup-result button.run-now"))
        css("#lookup-result button.run-now").click()
        wait_for("run now", lambda: "is due now" in css("#lookup-result").text)
        status, job = http_json("GET", api + "/v1/topics/orders/jobs/order-43")
        assert status == 200 and job["due_at_ms"] < time.time() * 1000 + 5000, (status, job)
        assert http_json("DELETE", api + "/v1/topics/orders/jobs/order-43")[0] == 204

        # Online: delivered once, the callback answers 500, max attempts 1:
        # a dead letter.
        open_page("/topics", "topics")
        css("tr[data-topic=orders] button.small").click()  # Set online
        wait_for("online", lambda: css("tr[data-topic=orders] .badge").text == "online")
        wait_for("first delivery", lambda: len(Callback.calls) >= 1)

        def dead_listed():
            open_page("/dead?topic=orders", "dead")
            return driver.find_elements(By.CSS_SELECTOR, "#dead-body tr[data-job=order-42]")
        wait_for("order-42 among the dead letters", dead_listed, timeout=20, every=0.5)
        row = css("#dead-body tr[data-job=order-42]")
        assert "500" in row.text, row.text
        assert SCRIPT in css("#dead-body tr[data-job=order-42] .dead-body").text
        shot("dead")

        # Requeue with the callback fixed: delivered.
        Callback.status = 200
        css("#dead-body tr[data-job=order-42] .requeue-one").click()
        wait_for("requeued", lambda: "requeued" in css("#dead-message").text)
        wait_for("delivered", lambda: any(c[0] == "order-42" and c[1] == 200 for c in Callback.calls))

        # The dashboard counts it, and matches the HTTP API.
        open_page("/?topic=orders", "dashboard")

        def counted():
            cell = css("tr[data-topic=orders] td[data-total=delivered]")
            return cell.text == "1"
        wait_for("delivered counted on the dashboard", counted, timeout=15)
        time.sleep(0.5)
        shown = {}
        for field in ("delayed", "ready", "working", "retrying", "dead"):
            shown[field] = int(css("tr[data-topic=orders] td[data-count=%s]" % field).text)
        totals = {f: int(css("tr[data-topic=orders] td[data-total=%s]" % f).text)
                  for f in ("added", "delivered", "failed")}
        status, stats = http_json("GET", api + "/v1/topics/orders/stats")
        if status == 200:
            for field, value in shown.items():
                assert stats["now"][field] == value, (field, value, stats)
            for field, value in totals.items():
                assert stats["total"][field] == value, (field, value, stats)
            print("dashboard matches GET /v1/topics/orders/stats:", shown, totals)
        else:
            # Without the public stats route: the job is gone, as the API says.
            print("GET /v1/topics/orders/stats answered %d; comparing with the job API" % status)
            assert http_json("GET", api + "/v1/topics/orders/jobs/order-42")[0] == 404
            assert sum(shown.values()) == 0, shown
        assert totals["added"] == 2 and totals["delivered"] == 1 and totals["failed"] >= 1, totals
        # The circuits beside the shards: the endpoint that answered 500 once
        # is listed, closed again (a success followed).
        endpoint = "127.0.0.1:%d/orders" % callback.server_address[1]
        wait_for("the endpoint's circuit on the dashboard",
                 lambda: driver.find_elements(By.CSS_SELECTOR, "#dash-circuits tr[data-circuit='%s']" % endpoint))
        assert css("#dash-circuits tr[data-circuit='%s'] .badge" % endpoint).text == "closed"
        shot("dashboard")

        # Quiet hours: a topic made in the page with a delivery window that
        # is closed now (it opens in two hours, for one); a bad window is
        # refused beside its field. Its job is held, with no attempt, and
        # the lookup says why.
        opens = time.gmtime(time.time() + 2 * 3600)
        window = "%02d:00-%02d:00 UTC" % (opens.tm_hour, (opens.tm_hour + 1) % 24)
        open_page("/topics", "topics")
        css("#new-topic").click()
        css("#field-name").send_keys("quiet")
        css("#field-callback_url").send_keys(callback_url)
        css("#field-delivery_window").send_keys("Mon-Fry 09:00-18:00")
        css("#topic-save").click()
        wait_for("validation message beside the window",
                 lambda: css("[data-error-for=delivery_window]").text.startswith("delivery_window"))
        css("#field-delivery_window").clear()
        css("#field-delivery_window").send_keys(window)
        css("#topic-save").click()
        wait_for("quiet topic row", lambda: driver.find_elements(By.CSS_SELECTOR, "tr[data-topic=quiet]"))
        status, shown_topic = http_json("GET", api + "/v1/topics/quiet")
        assert status == 200 and shown_topic["delivery_window"] == window, (status, shown_topic)
        status, added = http_json("POST", api + "/v1/topics/quiet/jobs", {"id": "night-1", "body": 1, "delay": 0})
        if status == 404:  # the server's topic cache refreshes every 200 ms
            time.sleep(0.5)
            status, added = http_json("POST", api + "/v1/topics/quiet/jobs", {"id": "night-1", "body": 1, "delay": 0})
        assert status == 201, (status, added)
        open_page("/jobs?topic=quiet", "jobs")

        def held_shown():
            css("#lookup-id").clear()
            css("#lookup-id").send_keys("night-1")
            css("#lookup-button").click()
            time.sleep(0.3)
            return "delivery window" in css("#lookup-result").text
        wait_for("night-1 held for the window, and said so", held_shown, timeout=15, every=0.5)
        # Held by the timer (delayed, due at the opening), or made ready by a
        # timer that had not read the new topic yet and kept by the consumers:
        # either way not called, and no attempt used.
        status, job = http_json("GET", api + "/v1/topics/quiet/jobs/night-1")
        assert status == 200 and job["state"] in ("delayed", "ready") and job["attempts"] == 0, (status, job)
        assert job["waiting"]["reason"] == "delivery_window", job
        assert not any(c[0] == "night-1" for c in Callback.calls), Callback.calls
        shot("job-held-by-window")

        open_page("/shards", "shards")
        wait_for("shard row", lambda: driver.find_elements(By.CSS_SELECTOR, "#shards-body tr"))
        shot("shards")
        open_page("/alerts", "alerts")
        shot("alerts")

        # A phone.
        driver.set_window_size(390, 844)
        open_page("/?topic=orders", "dashboard")
        shot("dashboard-phone")
        open_page("/topics", "topics")
        shot("topics-phone")
        no_alert()
        print("admin browser test passed; screenshots in", shots)
    except BaseException:
        if driver is not None:
            driver.save_screenshot(os.path.join(shots, "failure.png"))
            print("page at the failure:", driver.current_url, "(screenshot failure.png)")
        # What dq said meanwhile: its error log (every process writes there).
        for name in sorted(os.listdir(os.path.join(work, "log"))) if os.path.isdir(os.path.join(work, "log")) else []:
            if name.startswith("err_"):
                with open(os.path.join(work, "log", name), errors="replace") as log:
                    print("---", name, "(last 40 lines)")
                    print("".join(log.readlines()[-40:]))
        raise
    finally:
        if driver is not None:
            driver.quit()
        for process in reversed(processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
        if os.environ.get("DQ_TEST_KEEP") is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work)


if __name__ == "__main__":
    main()
