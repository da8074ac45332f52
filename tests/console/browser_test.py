#!/usr/bin/python3
"""once-console in a real browser: headless Chromium driven through WebDriver (selenium).

Logs in, opens every page, redrives a dead letter and retries a failed saga by clicking
(through the confirmation), checks each effect in the database with psql, checks that a
viewer cannot act, and saves a screenshot of each page.

    browser_test.py BASE_URL SCREENSHOT_DIR
    env: ADMIN_SECRET, VIEWER_SECRET (the users "admin" and "viewer"), FORBIDDEN (text that
         must appear in no page: secrets, hashes), and PGHOST/PGPORT/PGUSER/PGDATABASE for psql.
Waits are WebDriverWait conditions with deadlines, never sleeps.
"""
import os
import re
import signal
import subprocess
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

base, shots = sys.argv[1].rstrip("/"), sys.argv[2]
os.makedirs(shots, exist_ok=True)
forbidden = [s for s in os.environ.get("FORBIDDEN", "").split("\n") if s]
checks = 0


def ok(cond, what):
    global checks
    if not cond:
        raise SystemExit(f"not ok - {what}")
    checks += 1
    print(f"ok {checks} - {what}", flush=True)


def psql(sql, db=None):
    return subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql] + (["-d", db] if db else []),
                          check=True, capture_output=True, text=True).stdout.strip()


opts = webdriver.ChromeOptions()
opts.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--window-size=1400,1000", "--force-device-scale-factor=1"):
    opts.add_argument(a)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
wait = WebDriverWait(driver, 20)


def shot(name):
    # the whole page: grow the window to the document's height first
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(max(height + 40, 600), 4000))
    driver.save_screenshot(os.path.join(shots, name + ".png"))
    driver.set_window_size(1400, 1000)


def page_is_clean():
    src = driver.page_source
    for f in forbidden:
        ok(f not in src, f"no secret in {driver.current_url}")


def open_nav(label, marker):
    driver.find_element(By.LINK_TEXT, label).click()
    return wait.until(EC.presence_of_element_located((By.ID, marker)))


def login(user, secret):
    driver.get(base + "/login")
    wait.until(EC.presence_of_element_located((By.ID, "user"))).send_keys(user)
    driver.find_element(By.ID, "secret").send_keys(secret)
    driver.find_element(By.ID, "login").click()
    wait.until(EC.presence_of_element_located((By.ID, "topics")))


try:
    # --- login
    driver.get(base + "/")
    wait.until(EC.presence_of_element_located((By.ID, "login")))
    ok(driver.current_url.endswith("/login"), "an anonymous visitor is sent to /login")
    shot("login")
    driver.find_element(By.ID, "user").send_keys("admin")
    driver.find_element(By.ID, "secret").send_keys("wrong password")
    driver.find_element(By.ID, "login").click()
    ok(wait.until(EC.presence_of_element_located((By.ID, "error"))).text.startswith("Wrong user"), "a wrong password is refused")
    login("admin", os.environ["ADMIN_SECRET"])
    cookie = driver.get_cookie("once_console_session")
    ok(cookie and cookie.get("httpOnly") and cookie.get("sameSite") == "Strict", "session cookie is HttpOnly, SameSite=Strict")
    forbidden.append(cookie["value"])

    # --- overview
    topics = driver.find_element(By.ID, "topics")
    rows = {r.find_elements(By.TAG_NAME, "td")[0].text: r for r in topics.find_elements(By.TAG_NAME, "tr")[1:]}
    ok(set(rows) >= {"orders.placed", "payment.capture", "mail.send"}, "overview lists the topics")
    ok("attn" in rows["payment.capture"].get_attribute("class"), "payment.capture (dead letters) is marked")
    ok("attn" not in (rows["orders.placed"].get_attribute("class") or ""), "orders.placed is not marked")
    ok(rows["mail.send"].find_elements(By.TAG_NAME, "td")[2].text == "1", "mail.send has 1 delayed message")
    if os.environ.get("EXPECT_RELAY"):
        ok(os.environ["EXPECT_RELAY"] in driver.find_element(By.ID, "relays").text, "the connected relay is listed")
    page_is_clean()
    shot("overview")

    # --- relays: the heartbeat's figures as the database has them; red once the relay stops
    if os.environ.get("EXPECT_RELAY"):
        name = os.environ["EXPECT_RELAY"]

        def relay_row():
            rows = driver.find_elements(By.CSS_SELECTOR, "#relay-heartbeats tr")[1:]
            return [r for r in rows if r.find_elements(By.TAG_NAME, "td")[0].text == name]
        open_nav("Relays", "relay-heartbeats")
        want = psql("SELECT host, pid, transport, sink, state, round(messages_per_s::numeric, 1), version "
                    f"FROM once.relay_heartbeats WHERE relay = '{name}'").split("|")
        row = relay_row()
        ok(len(row) == 1, "the relays page lists the relay once")
        cells = [td.text for td in row[0].find_elements(By.TAG_NAME, "td")]
        ok(cells[1:5] == want[0:4], f"host, pid, transport and sink as in the database ({cells[1:5]} = {want[0:4]})")
        ok(cells[5].startswith(want[4] + " since "), f"its state as in the database ({cells[5]})")
        ok(cells[6].endswith(" ago") and "not alive" not in cells[6], f"last heartbeat ({cells[6]})")
        ok(cells[7] == want[5] and cells[9] == want[6], f"messages/s and version as in the database ({cells[7]}, {cells[9]})")
        ok("attn" not in (row[0].get_attribute("class") or ""), "a live relay is not red")
        page_is_clean()
        shot("relays")
        os.kill(int(os.environ["RELAY_PID"]), signal.SIGTERM)

        def red_after_stop(d):
            d.get(base + "/relays")
            r = relay_row()
            return r and "attn" in (r[0].get_attribute("class") or "")
        WebDriverWait(driver, 30, poll_frequency=0.5).until(red_after_stop)
        ok(psql(f"SELECT state FROM once.relay_heartbeats WHERE relay = '{name}'") == "stopped",
           "database: the relay's last heartbeat says stopped")
        ok("(stopped)" in relay_row()[0].text, "the stopped relay is red and says so")
        shot("relays_stopped")
        driver.get(base + "/")
        beats = wait.until(EC.presence_of_element_located((By.ID, "relay-beats")))
        red = [r for r in beats.find_elements(By.CSS_SELECTOR, "tr.attn") if name in r.text]
        ok(red and f"relay {name} last seen" in red[0].text,
           "the overview marks the stopped relay red while messages are ready")
        ok("Nothing needs attention" not in driver.page_source, "the overview does not say nothing needs attention")
    # --- the WAL transport: the backlog waits in the slot, and the overview says so by name
    note = driver.find_element(By.ID, "wal-note").text
    ok("once.transport = 'wal'" in note and "replication slot console_wal" in note,
       f"the overview names the slot the WAL transport's messages wait in ({note})")

    def slot_db():
        return psql("SELECT active, coalesce(active_pid::text, '—'), wal_status, confirmed_flush_lsn, "
                    "(pg_current_wal_lsn() - restart_lsn)::bigint, (pg_current_wal_lsn() - confirmed_flush_lsn)::bigint "
                    "FROM pg_replication_slots WHERE slot_name = 'console_wal'").split("|")

    def slot_row():
        row = driver.find_element(By.CSS_SELECTOR, "#wal-slots tr[data-slot=console_wal]")
        cell = lambda c: row.find_element(By.CSS_SELECTOR, "td." + c)
        return row, {"active": cell("active").text, "pid": cell("pid").text, "status": cell("wal-status").text,
                     "lsn": cell("lsn").text, "retained": int(cell("retained").get_attribute("data-bytes")),
                     "unconfirmed": int(cell("unconfirmed").get_attribute("data-bytes")), "lag": cell("lag").text}

    def check_slot_page(what):
        # WAL grows between two reads (the console's own transactions write none, others may):
        # each byte figure lies between the database's before and after the page.
        before = slot_db()
        driver.get(base + "/wal?refresh=off")
        wait.until(EC.presence_of_element_located((By.ID, "wal-slots")))
        after = slot_db()
        row, s = slot_row()
        ok(s["active"] == ("yes" if after[0] == "t" else "no") and s["pid"] == after[1] and s["status"] == after[2]
           and s["lsn"] == after[3], f"{what}: active, walsender pid, wal_status, confirmed position as the database ({s})")
        ok(int(before[4]) <= s["retained"] <= int(after[4]) and int(before[5]) <= s["unconfirmed"] <= int(after[5]),
           f"{what}: WAL retained {s['retained']} and not confirmed {s['unconfirmed']} as the database "
           f"({before[4]}..{after[4]}, {before[5]}..{after[5]})")
        return row, s

    row, s = check_slot_page("a slot no relay streams")
    ok(s["unconfirmed"] > 150 * 40, "the 150 messages are WAL the slot has not confirmed")
    ok(s["lag"] == "—" and psql("SELECT count(*) FROM pg_stat_replication") == "0", "no lag without a walsender")
    ok("attn" in row.get_attribute("class"), "a slot nobody streams is marked")
    ok("once.transport: wal" in driver.find_element(By.ID, "transport").text, "the page shows the transport")
    page_is_clean()
    shot("wal")
    # a walsender streams the slot (pg_recvlogical stands in for the relay)
    recv = subprocess.Popen(["pg_recvlogical", "-d", os.environ["PGDATABASE"], "-S", "console_wal", "--start",
                             "-o", "proto_version=1", "-o", "publication_names=console_pub", "-f", "/dev/null"])
    try:
        WebDriverWait(driver, 30).until(lambda d: psql("SELECT active FROM pg_replication_slots "
                                                       "WHERE slot_name = 'console_wal'") == "t")
        row, s = check_slot_page("a streamed slot")
        ok(s["pid"] == psql("SELECT pid FROM pg_stat_replication"), f"the walsender's pid ({s['pid']})")
        ok("attn" not in (row.get_attribute("class") or ""), "a streamed slot is not marked")
    finally:
        recv.terminate()
        recv.wait(timeout=20)

    # --- auto-refresh: the overview reloads itself; the pause link stops it
    driver.get(base + "/")
    wait.until(EC.presence_of_element_located((By.ID, "topics")))
    ok(driver.find_elements(By.CSS_SELECTOR, "meta[http-equiv=refresh]"), "the overview refreshes itself")
    driver.execute_script("window.loadedBefore = 1")
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return window.loadedBefore") is None)
    ok(driver.find_elements(By.ID, "topics"), "the overview reloaded by itself")
    driver.find_element(By.ID, "refresh-toggle").click()
    wait.until(lambda d: "refresh=off" in d.current_url)
    ok(not driver.find_elements(By.CSS_SELECTOR, "meta[http-equiv=refresh]") and
       driver.find_element(By.ID, "refresh-toggle").text == "Resume auto-refresh", "paused: no refresh, a resume link")

    # --- retrying messages: attempts, last error, next try, two pages
    open_nav("Retrying", "retrying")
    want = psql("SELECT string_agg(id || '|' || attempt || '|' || last_error || '|' || to_char(visible_at AT TIME ZONE "
                "current_setting('TimeZone'), 'YYYY-MM-DD HH24:MI:SS'), E'\\n' ORDER BY pos) FROM once.outbox "
                "WHERE topic = 'sms.send' AND dead_at IS NULL AND attempt > 0 AND last_error IS NOT NULL").split("\n")
    ok(len(want) == 55, "database: 55 retrying messages")

    def listed():
        return ["|".join([r.get_attribute("data-id"), r.find_element(By.CSS_SELECTOR, "td.attempts").text,
                          r.find_element(By.CSS_SELECTOR, "td.last-error").text,
                          r.find_element(By.CSS_SELECTOR, "td.next-try").text])
                for r in driver.find_elements(By.CSS_SELECTOR, "#retrying tr[data-id]")]
    first = listed()
    ok(first == want[:50], "the first page: 50 retrying messages with attempts, last error and next try as the database")
    page_is_clean()
    shot("retrying")
    driver.find_element(By.ID, "more").click()
    wait.until(lambda d: "after=" in d.current_url)
    ok(listed() == want[50:], "the next page: the other 5")

    # --- dead letters: list, filter, detail, redrive by clicking
    open_nav("Dead letters", "dead")
    ok(len(driver.find_elements(By.CSS_SELECTOR, "#dead input[type=checkbox]")) == 7, "7 dead letters listed")
    page_is_clean()
    shot("dead_letters")
    driver.find_element(By.ID, "f-until").send_keys("2000-01-01")
    driver.find_element(By.ID, "filter").click()
    wait.until(lambda d: "until=2000-01-01" in d.current_url)
    ok(len(driver.find_elements(By.CSS_SELECTOR, "#dead input[type=checkbox]")) == 0, "none died before 2000 (age filter)")
    driver.find_element(By.ID, "f-until").clear()
    driver.find_element(By.ID, "f-key").send_keys("pay-3")
    driver.find_element(By.ID, "filter").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#dead input[type=checkbox]")) == 1)
    ok(True, "filter by key leaves one")
    target = psql("SELECT id FROM once.outbox WHERE key = 'pay-3'")
    driver.find_element(By.CSS_SELECTOR, f"a[href$='/dead/{target}']").click()
    payload = wait.until(EC.presence_of_element_located((By.ID, "payload")))
    ok('"amount": 453' in payload.text, "detail shows the payload")
    ok("traceparent" in driver.find_element(By.ID, "headers").text, "detail shows the headers")
    ok("HTTP 502" in driver.find_element(By.ID, "last-error").text, "detail shows the error")
    shot("dead_letter")
    driver.find_element(By.ID, "redrive").click()
    q = wait.until(EC.presence_of_element_located((By.ID, "question")))
    ok(q.text.startswith("Redrive these 1 dead letter"), "redrive asks for confirmation")
    shot("confirm_redrive")
    ok(psql(f"SELECT dead_at IS NOT NULL FROM once.outbox WHERE id = '{target}'") == "t", "still dead before confirming")
    driver.find_element(By.ID, "confirm").click()
    flash = wait.until(EC.presence_of_element_located((By.ID, "flash")))
    ok(flash.text == "Redrove 1 of 1 dead letter(s).", "the console reports the redrive")
    ok(psql(f"SELECT dead_at IS NULL AND attempt = 0 FROM once.outbox WHERE id = '{target}'") == "t",
       "database: the message is no longer dead, attempts reset")
    ok(psql(f"SELECT actor || ' ' || action || ' ' || affected FROM once.console_actions WHERE ids = ARRAY['{target}']")
       == "admin redrive 1", "database: the action is in once.console_actions")

    # several at once: select two, discard them
    boxes = driver.find_elements(By.CSS_SELECTOR, "#dead input[type=checkbox]")
    ok(len(boxes) == 6, "6 dead letters left")
    picked = [b.get_attribute("value") for b in boxes[-2:]]
    for b in boxes[-2:]:
        b.click()
    driver.find_element(By.ID, "discard-selected").click()
    wait.until(EC.presence_of_element_located((By.ID, "question")))
    driver.find_element(By.ID, "confirm").click()
    ok(wait.until(EC.presence_of_element_located((By.ID, "flash"))).text == "Discarded 2 of 2 dead letter(s).",
       "two discarded at once")
    ok(psql("SELECT count(*) FROM once.outbox WHERE id IN ('%s')" % "','".join(picked)) == "0", "database: both are gone")

    # --- find a message by id, wherever it is
    def find(mid):
        open_nav("Find", "find-id")
        driver.find_element(By.ID, "find-id").send_keys(mid)
        driver.find_element(By.ID, "find").click()
        wait.until(lambda d: "id=" in d.current_url)
        return [(r.get_attribute("data-place"), r.find_element(By.CSS_SELECTOR, "td.state").text)
                for r in driver.find_elements(By.CSS_SELECTOR, "#found tr[data-place]")]
    retrying_id = want[0].split("|")[0]
    ok(find(retrying_id) == [("outbox", "retrying")] and
       psql(f"SELECT attempt > 0 AND last_error IS NOT NULL AND dead_at IS NULL AND relay IS NULL FROM once.outbox "
            f"WHERE id = '{retrying_id}'") == "t", "a retrying message is found in the outbox, retrying")
    dead_id = psql("SELECT id FROM once.outbox WHERE key = 'pay-7' AND dead_at IS NOT NULL")
    ok(find(dead_id) == [("outbox", "dead")], "a dead letter is found in the outbox, dead")
    shot("find")
    ok(find(picked[0]) == [] and "delivered or never sent" in driver.find_element(By.ID, "not-found").text
       and psql(f"SELECT count(*) FROM once.outbox WHERE id = '{picked[0]}'") == "0",
       "a discarded message is in none of them: 'delivered or never sent'")
    ok(find("msg-poison-1") == [("inbox", "poison"), ("inbox failures", "failed 2 times")] and
       psql("SELECT poison FROM once.inbox WHERE message_id = 'msg-poison-1'") == "t" and
       psql("SELECT attempts FROM once.inbox_failures WHERE message_id = 'msg-poison-1'") == "2",
       "an inbox message id is found in the inbox (poison) and its failures")

    # --- redrive and discard by filter, with a count, a confirmation and a bound
    psql("SELECT count(once.send('push.send', jsonb_build_object('n', g), k)) "
         "FROM unnest(ARRAY['device-1', 'device-2', 'device-3', 'device-4', 'device-5', 'other-1']) WITH ORDINALITY AS t(k, g)")
    psql("SELECT count(once.dead('test-relay', m.id, 'APNs 410 Unregistered')) FROM once.claim('test-relay', 100, "
         "'1 minute', ARRAY['push.send']) m")
    open_nav("Dead letters", "dead")
    driver.find_element(By.ID, "by-filter").click()
    wait.until(EC.presence_of_element_located((By.ID, "b-topic"))).send_keys("push.send")
    driver.find_element(By.ID, "b-key-prefix").send_keys("device-")
    driver.find_element(By.ID, "count").click()
    n_db = psql("SELECT count(*) FROM once.outbox WHERE topic = 'push.send' AND key LIKE 'device-%' AND dead_at IS NOT NULL")
    matching = wait.until(EC.presence_of_element_located((By.ID, "matching")))
    ok(matching.get_attribute("data-n") == n_db == "5", f"the filter page counts the matching dead letters ({matching.text})")
    shot("dead_bulk")
    driver.find_element(By.ID, "bulk-redrive").click()
    q = wait.until(EC.presence_of_element_located((By.ID, "question")))
    ok(q.get_attribute("data-n") == "5" and q.text.startswith("Redrive these 5 dead letters"),
       f"the confirmation says how many it will touch ({q.text[:60]})")
    shot("confirm_bulk_redrive")
    # one more dies after the confirmation: the action must leave it
    psql("SELECT once.send('push.send', '{\"n\": 7}', 'device-6')")
    psql("SELECT count(once.dead('test-relay', m.id, 'APNs 410 Unregistered')) FROM once.claim('test-relay', 100, "
         "'1 minute', ARRAY['push.send']) m")
    driver.find_element(By.ID, "confirm").click()
    flash = wait.until(EC.presence_of_element_located((By.ID, "flash"))).text
    ok(flash == "Redrove 5 dead letter(s) of the 5 the confirmation counted.", f"the bulk redrive reports ({flash})")
    ok(psql("SELECT string_agg(key, ' ' ORDER BY key) FROM once.outbox WHERE topic = 'push.send' AND dead_at IS NOT NULL")
       == "device-6 other-1", "database: the 5 were redriven; the one that died after the confirmation and the other key stay dead")
    ok(psql("SELECT affected || ' ' || result FROM once.console_actions WHERE action = 'redrive_matching'") == "5 5 matched",
       "database: the bulk redrive is in once.console_actions")
    driver.get(base + "/dead/bulk?topic=push.send&error=apns")
    matching = wait.until(EC.presence_of_element_located((By.ID, "matching")))
    ok(matching.get_attribute("data-n") == "2", "the error text filter matches the two left")
    driver.find_element(By.ID, "bulk-discard").click()
    ok(wait.until(EC.presence_of_element_located((By.ID, "question"))).get_attribute("data-n") == "2", "confirm discard of 2")
    driver.find_element(By.ID, "confirm").click()
    ok(wait.until(EC.presence_of_element_located((By.ID, "flash"))).text ==
       "Discarded 2 dead letter(s) of the 2 the confirmation counted.", "the bulk discard reports")
    ok(psql("SELECT count(*) FROM once.outbox WHERE topic = 'push.send' AND dead_at IS NOT NULL") == "0",
       "database: both discarded")

    # --- blocked keys
    open_nav("Blocked keys", "blocked")
    ok("pay-7" in driver.find_element(By.ID, "blocked").text, "pay-7 is listed as blocked")
    page_is_clean()
    shot("blocked_keys")

    # --- sagas: list by status, detail with diagram, retry by clicking
    open_nav("Sagas", "sagas")
    Select(driver.find_element(By.ID, "f-status")).select_by_visible_text("failed")
    driver.find_element(By.ID, "filter").click()
    wait.until(lambda d: "status=failed" in d.current_url)
    ok(len(driver.find_elements(By.CSS_SELECTOR, "#sagas tr")) == 3, "2 failed sagas listed")
    shot("sagas")
    driver.find_element(By.LINK_TEXT, "order-declined-1").click()
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#diagram svg")))
    ok("card declined" in driver.find_element(By.ID, "cause").text, "the cause is the declined card")
    ok("stock service timeout" in driver.find_element(By.ID, "last-error").text or
       driver.find_element(By.ID, "last-error").text != "", "the last error is shown apart")
    last_error = psql("SELECT last_error FROM once.saga_instances WHERE name = 'cafe_order' AND saga_id = 'order-declined-1'")
    ok("kept failing (1 attempt);" in last_error and last_error in driver.find_element(By.ID, "last-error").text,
       f"a compensation allowed one attempt says '(1 attempt)' ({last_error})")
    ok(len(driver.find_elements(By.CSS_SELECTOR, "#diagram svg g.node")) >= 8, "the diagram has the states")
    ok(len(driver.find_elements(By.CSS_SELECTOR, "#history tr")) > 3, "the timeline is shown")
    page_is_clean()
    shot("saga")
    driver.find_element(By.ID, "retry").click()
    wait.until(EC.presence_of_element_located((By.ID, "question")))
    shot("confirm_retry")
    driver.find_element(By.ID, "confirm").click()
    flash = wait.until(EC.presence_of_element_located((By.ID, "flash")))
    ok("retry done" in flash.text, "the console reports the retry")
    st = psql("SELECT status FROM once.saga_instances WHERE saga_id = 'order-declined-1'")
    ok(st == "compensating", f"database: the saga left failed and compensates again ({st})")
    ok(psql("SELECT actor || ' ' || action FROM once.console_actions WHERE ids = ARRAY['cafe_order', 'order-declined-1']")
       == "admin saga_retry", "database: the retry is in once.console_actions, with the saga's definition")
    open_nav("Sagas", "sagas")
    driver.find_element(By.ID, "q").send_keys("order-soldout")
    driver.find_element(By.ID, "search").click()
    ok(wait.until(EC.presence_of_element_located((By.ID, "status"))).text == "compensated", "search by saga id")

    # --- sagas per definition and status; search by a business key (key=value of the input)
    open_nav("Sagas", "definition-counts")
    rows = [r for r in driver.find_elements(By.CSS_SELECTOR, "#definition-counts tr")[1:]
            if r.find_elements(By.TAG_NAME, "td")[0].text == "cafe_order"]
    ok(len(rows) == 1, "the sagas page has a row per definition")
    cells = [td.text for td in rows[0].find_elements(By.TAG_NAME, "td")][1:]
    want = [psql(f"SELECT count(*) FROM once.saga_instances WHERE name = 'cafe_order' AND status = '{s}'")
            for s in ("running", "compensating", "failed", "completed", "compensated")]
    ok(cells == want, f"per-definition counts match the database ({cells} = {want})")
    ok("attn" in rows[0].get_attribute("class"), "a definition with failed sagas is marked")
    driver.find_element(By.ID, "q").send_keys("item=matcha")
    driver.find_element(By.ID, "search").click()
    wait.until(lambda d: "matcha" in d.current_url)   # the result page, not the page clicked on
    wait.until(EC.presence_of_element_located((By.ID, "search-result")))
    ids = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#sagas td:first-child a")]
    ok(ids == ["order-soldout"], f"search by business key item=matcha ({ids})")
    href = driver.find_element(By.CSS_SELECTOR, "#sagas td:first-child a").get_attribute("href")
    ok("name=cafe_order" in href and "id=order-soldout" in href, f"the result links to the saga by (name, id) ({href})")
    shot("saga_search")
    q = driver.find_element(By.ID, "q")
    q.clear()
    q.send_keys("price=380")
    driver.find_element(By.ID, "search").click()
    wait.until(lambda d: "price" in d.current_url)
    ids = sorted(a.text for a in driver.find_elements(By.CSS_SELECTOR, "#sagas td:first-child a"))
    ok(ids == ["order-declined-1", "order-declined-2"], f"search by a numeric business key price=380 ({ids})")

    # --- the same saga id in two definitions: each has its own page; aborting one leaves the other
    def twin_links():
        return {r.find_elements(By.TAG_NAME, "td")[1].text.split(" ")[0]: r.find_element(By.CSS_SELECTOR, "td a")
                for r in driver.find_elements(By.CSS_SELECTOR, "#sagas tr")[1:]}
    q = driver.find_element(By.ID, "q")
    q.clear()
    q.send_keys("order-twin")
    driver.find_element(By.ID, "search").click()
    # Wait for the result page: the page clicked on has a #search-result too, which goes stale
    # when the new page replaces it.
    wait.until(lambda d: "order-twin" in d.current_url)
    ok("one per definition" in wait.until(EC.presence_of_element_located((By.ID, "search-result"))).text,
       "search by an id two definitions have lists both")
    links = twin_links()
    ok(set(links) == {"cafe_order", "gift_order"}, f"both twins listed ({sorted(links)})")
    shot("saga_twins")
    links["gift_order"].click()
    wait.until(EC.presence_of_element_located((By.ID, "status")))
    ok("gift_order" in driver.find_element(By.ID, "saga").text and
       "wrap_gift" in driver.find_element(By.ID, "history").text, "the gift_order twin's page shows its definition and history")
    ok("reserve_stock" not in driver.find_element(By.ID, "history").text, "and not the cafe_order twin's history")
    driver.get(base + "/sagas/order-twin")   # a link of the old console: lists the twins
    wait.until(EC.presence_of_element_located((By.ID, "search-result")))
    links = twin_links()
    ok(set(links) == {"cafe_order", "gift_order"}, "an old /sagas/<id> link lists the definitions with the id")
    links["cafe_order"].click()
    ok(wait.until(EC.presence_of_element_located((By.ID, "status"))).text == "running", "the cafe_order twin is running")
    ok("reserve_stock" in driver.find_element(By.ID, "history").text, "its page shows its own history")
    driver.find_element(By.ID, "abort").click()
    ok("cafe_order" in wait.until(EC.presence_of_element_located((By.ID, "question"))).text,
       "the abort confirmation names the definition")
    driver.find_element(By.ID, "confirm").click()
    ok("abort done" in wait.until(EC.presence_of_element_located((By.ID, "flash"))).text, "the console reports the abort")
    st = psql("SELECT string_agg(name || '=' || status, ' ' ORDER BY name) FROM once.saga_instances WHERE saga_id = 'order-twin'")
    ok(st == "cafe_order=compensating gift_order=running", f"database: only the cafe_order twin was aborted ({st})")
    ok(driver.find_element(By.ID, "status").text == "compensating", "the page shows the aborted twin")
    ok(psql("SELECT actor || ' ' || action FROM once.console_actions WHERE ids = ARRAY['cafe_order', 'order-twin']")
       == "admin saga_abort", "database: the abort is in once.console_actions, with the saga's definition")
    driver.get(base + "/saga?name=gift_order&id=order-twin")
    ok(wait.until(EC.presence_of_element_located((By.ID, "status"))).text == "running", "the gift_order twin still runs")
    driver.get(base + "/saga?name=no_such_definition&id=order-twin")
    ok("no_such_definition" in wait.until(EC.presence_of_element_located((By.ID, "not-found"))).text,
       "an unknown (name, id) is not found")

    # --- inbox poison: retry by clicking
    open_nav("Inbox", "poison")
    ok("msg-poison-1" in driver.find_element(By.ID, "poison").text, "the poison message is listed")
    ok(driver.find_elements(By.ID, "subscriptions"), "the inbox page lists the subscriptions")
    shot("inbox")
    driver.find_element(By.CSS_SELECTOR, "#poison button").click()
    wait.until(EC.presence_of_element_located((By.ID, "question")))
    ok(driver.current_url.endswith("/inbox/confirm"), f"the inbox retry is confirmed at /inbox/confirm ({driver.current_url})")
    driver.find_element(By.ID, "confirm").click()
    ok(wait.until(EC.presence_of_element_located((By.ID, "flash"))).text == "Retry: done.", "inbox retry reported")
    ok(psql("SELECT count(*) FROM once.inbox WHERE poison") == "0", "database: the message is no longer poison")

    # --- idempotency keys: look one up, release it
    open_nav("Keys", "k-scope")
    driver.find_element(By.ID, "k-scope").send_keys("POST /payments")
    driver.find_element(By.ID, "k-key").send_keys("idem-stuck-1")
    driver.find_element(By.ID, "lookup").click()
    stuck_owner = psql("SELECT owner FROM once.keys WHERE key = 'idem-stuck-1'")
    key = wait.until(EC.presence_of_element_located((By.ID, "key-" + stuck_owner))).text
    ok("in_progress" in key and "card_charged" in key and "postgres" in key, "key state, recovery point and owner shown")
    page_is_clean()
    shot("key")
    driver.find_element(By.ID, "release-" + stuck_owner).click()
    wait.until(EC.presence_of_element_located((By.ID, "question")))
    ok(driver.current_url.endswith("/keys/confirm"), "a key release is confirmed at /keys/confirm")
    driver.find_element(By.ID, "confirm").click()
    ok(wait.until(EC.presence_of_element_located((By.ID, "flash"))).text == "Release: done.", "key release reported")
    ok(psql("SELECT count(*) FROM once.keys WHERE key = 'idem-stuck-1'") == "0", "database: the key is released")

    # two roles hold the same (scope, key): both rows listed; releasing one leaves the other
    open_nav("Keys", "k-scope")
    driver.find_element(By.ID, "k-scope").send_keys("POST /refunds")
    driver.find_element(By.ID, "k-key").send_keys("idem-shared")
    driver.find_element(By.ID, "lookup").click()
    wait.until(EC.presence_of_element_located((By.ID, "keys")))
    owners = [d.text for d in driver.find_elements(By.CSS_SELECTOR, "#keys dl.key dd.owner")]
    ok(sorted(owners) == ["console_shop_a", "console_shop_b"], f"the key page lists each owner's row ({owners})")
    shot("key_two_owners")
    oid_a = psql("SELECT oid FROM pg_roles WHERE rolname = 'console_shop_a'")
    driver.find_element(By.ID, "release-" + oid_a).click()
    ok("console_shop_a" in wait.until(EC.presence_of_element_located((By.ID, "question"))).text,
       "the release confirmation names the owner")
    driver.find_element(By.ID, "confirm").click()
    ok(wait.until(EC.presence_of_element_located((By.ID, "flash"))).text == "Release: done.", "release of one owner's row reported")
    left = psql("SELECT string_agg(owner::regrole::text, ' ') FROM once.keys WHERE key = 'idem-shared'")
    ok(left == "console_shop_b", f"database: only console_shop_a's row was released ({left})")
    owners = [d.text for d in driver.find_elements(By.CSS_SELECTOR, "#keys dl.key dd.owner")]
    ok(owners == ["console_shop_b"], f"the page now lists the other owner's row only ({owners})")
    ok(psql("SELECT actor || ' ' || affected FROM once.console_actions WHERE action = 'key_release' "
            "AND ids = ARRAY['POST /refunds', 'idem-shared', 'console_shop_a']") == "admin 1",
       "database: the release is in once.console_actions, with the owner")

    # --- overview: send and ack rates (the console samples every second in this test)
    # rows of the table (the rate is once.outbox's inserts): the table transport for this session
    psql("SET once.transport = 'table'; SELECT count(*) FROM (SELECT once.send('rates.test', '{}') FROM generate_series(1, 50)) s")

    def sent_max():   # "<now> msg/s now, max <max>" beside the send chart
        texts = driver.find_elements(By.CSS_SELECTOR, "#rates .spark-text")
        m = re.search(r"max ([0-9.]+)", texts[0].text) if texts else None
        return float(m.group(1)) if m else 0.0

    def sends_seen(d):
        d.get(base + "/")
        return sent_max() >= 40
    WebDriverWait(driver, 30, poll_frequency=1).until(sends_seen)
    ok(driver.find_elements(By.CSS_SELECTOR, "svg#rate-sent rect") and driver.find_elements(By.CSS_SELECTOR, "svg#rate-acked"),
       f"the overview charts the send rate (50 sends in one second: max {sent_max()} msg/s) and the ack rate")
    page_is_clean()
    shot("overview_rates")


    # --- two databases in one console: a selector, each page and link in its own database
    driver.get(base + "/")
    wait.until(EC.presence_of_element_located((By.ID, "databases")))
    names = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#databases a")]
    ok(names == ["console", "walonly"], f"the selector lists both databases ({names})")
    driver.find_element(By.LINK_TEXT, "walonly").click()
    wait.until(lambda d: d.current_url.endswith("/db/walonly/"))
    empty = wait.until(EC.presence_of_element_located((By.ID, "outbox-empty"))).text
    ok(psql("SELECT count(*) FROM once.outbox", "walonly") == "0" and
       psql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'walonly_slot' AND NOT active", "walonly") == "1",
       "database: walonly's outbox table is empty, its slot not streamed")
    ok("The outbox is empty" not in empty and empty.startswith("The outbox table is empty.") and
       "replication slot walonly_slot" in empty, f"its overview says where the 150 messages wait ({empty})")
    ok("walonly" in driver.find_element(By.CSS_SELECTOR, "#databases a.on").text, "the selector marks the database shown")
    local = [e.get_attribute("href") for e in driver.find_elements(By.CSS_SELECTOR, "a[href]")
             if e.get_attribute("href").startswith(base)] + \
            [e.get_attribute("action") for e in driver.find_elements(By.CSS_SELECTOR, "form[action]")]
    stray = [u for u in local if not (u.startswith(base + "/db/") or u.endswith("/logout"))]
    ok(local and not stray, f"every link and form of its page stays in a database ({stray})")
    shot("overview_walonly")
    open_nav("WAL", "wal-slots")
    ok(driver.current_url.endswith("/db/walonly/wal"), "its WAL page is under /db/walonly/")
    slots = [r.get_attribute("data-slot") for r in driver.find_elements(By.CSS_SELECTOR, "#wal-slots tr[data-slot]")]
    ok(slots == [psql("SELECT string_agg(slot_name, ' ') FROM pg_replication_slots WHERE database = 'walonly'")],
       f"it lists walonly's slot only ({slots})")
    open_nav("Dead letters", "dead")
    ok(driver.current_url.endswith("/db/walonly/dead") and
       len(driver.find_elements(By.CSS_SELECTOR, "#dead input[type=checkbox]")) == 0 ==
       int(psql("SELECT count(*) FROM once.outbox WHERE dead_at IS NOT NULL", "walonly")), "its dead letters: none")
    driver.find_element(By.LINK_TEXT, "console").click()
    wait.until(lambda d: d.current_url.endswith("/db/console/"))
    open_nav("Dead letters", "dead")
    n = len(driver.find_elements(By.CSS_SELECTOR, "#dead input[type=checkbox]"))
    ok(n == int(psql("SELECT count(*) FROM once.outbox WHERE dead_at IS NOT NULL")) and n > 0,
       f"back in the first database: its {n} dead letters")
    driver.get(base + "/db/nosuch/")
    ok("no such database" in driver.page_source, "an unknown database is not found")
    driver.get(base + "/")
    wait.until(EC.presence_of_element_located((By.ID, "topics")))
    # --- actions
    open_nav("Actions", "actions")
    text = driver.find_element(By.ID, "actions").text
    ok(all(a in text for a in ("saga_retry", "redrive", "discard", "inbox_retry", "key_release", "redrive_matching",
                               "discard_matching")),
       "the actions page lists every action")
    shot("actions")
    driver.find_element(By.ID, "logout").click()
    wait.until(EC.presence_of_element_located((By.ID, "login")))
    driver.get(base + "/dead")
    wait.until(EC.presence_of_element_located((By.ID, "login")))
    ok(driver.current_url.endswith("/login"), "after logout the pages need a login again")

    # --- a viewer looks but cannot act
    login("viewer", os.environ["VIEWER_SECRET"])
    victim = psql("SELECT id FROM once.outbox WHERE key = 'pay-7' AND dead_at IS NOT NULL")
    driver.get(base + "/dead/" + victim)
    wait.until(EC.presence_of_element_located((By.ID, "redrive"))).click()
    wait.until(EC.presence_of_element_located((By.ID, "question")))
    driver.find_element(By.ID, "confirm").click()
    ok("cannot" in wait.until(EC.presence_of_element_located((By.ID, "error"))).text, "a viewer's redrive is refused")
    ok(psql(f"SELECT dead_at IS NOT NULL FROM once.outbox WHERE id = '{victim}'") == "t", "database: still dead")
    print(f"1..{checks}")
finally:
    driver.quit()
