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


def psql(sql):
    return subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
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
    driver.find_element(By.CSS_SELECTOR, f"a[href='/dead/{target}']").click()
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
    psql("SELECT count(*) FROM (SELECT once.send('rates.test', '{}') FROM generate_series(1, 50)) s")

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

    # --- actions
    open_nav("Actions", "actions")
    text = driver.find_element(By.ID, "actions").text
    ok(all(a in text for a in ("saga_retry", "redrive", "discard", "inbox_retry", "key_release")),
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
