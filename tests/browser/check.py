# SPDX-License-Identifier: BSD-2-Clause
"""Opens kiln's HTML pages in headless Chromium and checks what is drawn.

Usage: check.py OUT_DIR DIFF_TEXT SMALL.html DIFF.html EMPTY.html PODS.html BIG.html SIZED.html...

SMALL is new.folded of run.sh, DIFF its diff against base.folded (whose
text form is DIFF_TEXT), PODS a profile of two pods with labels (75 and 25
samples), BIG a page of 100 000 nodes, and the SIZED pages
the same program at growing node counts, to check the file grows linearly.
The page exposes window.kiln (state, drawn frames); clicks, typing and
hovering go through the DevTools protocol as real input events, and colours
are read back from the canvas pixels. Prints PASS/FAIL lines, measurements,
and "N passed, N failed, 0 skipped" last; saves a screenshot of every page in OUT_DIR.
"""

import os
import re
import statistics
import sys
import time

from cdp import Browser, CDPError

passed = failed = 0
EXPECTED = 21  # results main() must report, the one on the count aside


def result(ok, name, detail):
    global passed, failed
    if ok:
        passed += 1
        print("PASS %s: %s" % (name, detail))
    else:
        failed += 1
        print("FAIL %s: %s" % (name, detail))


def near(a, b, tol):
    return abs(a - b) <= tol


class Page:
    """One kiln page open in the browser."""

    def __init__(self, browser, path):
        self.b = browser
        self.url = "file://" + os.path.abspath(path)
        browser.take_events("Network.requestWillBeSent")
        self.load_s = browser.open(self.url)
        self.b.eval("new Promise((ok) => requestAnimationFrame(() => ok(true)))")

    def kiln(self, expr):
        return self.b.eval("window.kiln." + expr)

    def state(self):
        return self.kiln("state()")

    def frames(self, name=None, view="main"):
        return self.b.eval("window.kiln.frames(%s, %r)" % (
            "undefined" if name is None else repr(name), view))

    def _into_view(self, f, view):
        """f again, after scrolling so its centre is on screen."""
        height = self.b.eval("innerHeight")
        if not 10 < f["cy"] < height - 10:
            self.b.eval("window.scrollBy(0, %d)" % (f["cy"] - height / 2))
            f = next(g for g in self.frames(f["name"], view) if g["node"] == f["node"])
        return f

    def click_frame(self, f, view="main", shift=False):
        f = self._into_view(f, view)
        self.b.click(f["cx"], f["cy"], shift)

    def hover_frame(self, f, view="main"):
        f = self._into_view(f, view)
        self.b.hover(f["cx"], f["cy"])

    def frame(self, name, view="main"):
        fs = self.frames(name, view)
        if len(fs) != 1:
            raise AssertionError("%d drawn frames of %s in %s" % (len(fs), name, view))
        return fs[0]

    def pixel(self, f, view="main"):
        """RGB at the centre of a drawn frame, from the canvas itself."""
        return self.b.eval(
            "Array.from(document.querySelector('#%s canvas').getContext('2d')"
            ".getImageData(%d, %d, 1, 1).data.slice(0, 3))"
            % ({"main": "flame"}.get(view, view), f["x"] + f["w"] / 2, f["y"] + f["h"] / 2))

    def problems(self):
        """Script errors, console errors and requests for anything but the page."""
        out = []
        for ev in self.b.take_events("Runtime.exceptionThrown"):
            out.append("exception: " + ev["params"]["exceptionDetails"].get("text", ""))
        for ev in self.b.take_events("Log.entryAdded"):
            if ev["params"]["entry"]["level"] == "error":
                out.append("console: " + ev["params"]["entry"]["text"])
        for ev in self.b.take_events("Network.requestWillBeSent"):
            url = ev["params"]["request"]["url"]
            if url != self.url:
                out.append("request: " + url)
        return out


def check(name, fn):
    try:
        ok, detail = fn()
    except (AssertionError, CDPError, KeyError, TypeError) as e:
        ok, detail = False, "%s: %s" % (type(e).__name__, e)
    result(ok, name, detail)


def small_page(b, out, path):
    p = Page(b, path)
    total = 110

    def widths():
        st = p.state()
        w = st["width"]
        root, hot = p.frame("all"), p.frame("hot")
        ok = near(root["w"], w, 0.5) and near(hot["w"], w * 65 / total, 1.0)
        return ok, "canvas %d px: all %.1f px (100%%), hot %.1f px (%.2f%%, want %.2f%%)" % (
            w, root["w"], hot["w"], 100 * hot["w"] / w, 100 * 65 / total)

    def hover():
        p.hover_frame(p.frame("hot"))
        text = b.eval("document.getElementById('tooltip').hidden ? '' : "
                      "document.getElementById('tooltip').innerText")
        ok = (text.startswith("hot\nmodule unknown\n") and "total: 65 samples (59.09% of all)" in text
              and "self: 60 samples (54.55% of all)" in text)
        return ok, "tooltip: " + " | ".join(text.splitlines())

    def zoom():
        p.click_frame(p.frame("work"))
        st = p.state()
        w = st["width"]
        z, hot = p.frame("work"), p.frame("hot")
        ok = (st["zoom"] == "work" and near(z["w"], w, 0.5) and
              near(hot["w"], w * 65 / 85, 1.0) and not p.frames("parse") and
              st["crumbs"] == "all\u203aapp\u203amain\u203awork")
        return ok, "clicked work: root is now %s, work %.1f px, hot %.1f px (want %.1f), " \
            "breadcrumb %r" % (st["zoom"], z["w"], hot["w"], w * 65 / 85, st["crumbs"])

    def reset():
        b.eval("document.getElementById('reset').click()")
        st = p.state()
        return st["zoom"] == "all" and near(p.frame("all")["w"], st["width"], 0.5), \
            "reset: root is %s" % st["zoom"]

    def search():
        b.eval("document.getElementById('search').focus()")
        b.type_text("o")
        st = p.state()
        match = (224, 64, 200)
        colours = {n: tuple(p.pixel(p.frame(n))) for n in ("work", "hot", "cold", "parse", "app")}
        ok = (st["query"] == "o" and near(st["matchedShare"], 100 * 85 / total, 0.01) and
              all(colours[n] == match for n in ("work", "hot", "cold")) and
              all(colours[n] != match for n in ("parse", "app")) and st["tableRows"] == 3)
        b.screenshot(os.path.join(out, "small-search.png"))
        return ok, "'o' matches work, hot, cold: %.2f%% of all (want %.2f%%, nested counted once); " \
            "drawn %s; table rows %d" % (st["matchedShare"], 100 * 85 / total, colours, st["tableRows"])

    def sandwich():
        b.eval("const s = document.getElementById('search'); s.value = ''; "
               "s.dispatchEvent(new Event('input'))")
        p.click_frame(p.frame("work"), shift=True)
        st = p.state()
        w = p.frame("work", "callers")["w"]
        callers = [n for n in ("main", "app", "bash") if p.frames(n, "callers")]
        hot = p.frame("hot", "callees")
        ok = (st["selected"] == "work" and st["zoom"] == "all" and callers == ["main", "app"] and
              near(hot["w"], w * 65 / 85, 1.0))
        return ok, "shift+click work: sandwich of %s, callers %s, callee hot %.1f of %.1f px" % (
            st["selected"], callers, hot["w"], w)

    def icicle():
        b.eval("document.querySelector('input[value=icicle]').click()")
        st = p.state()
        root, hot = p.frame("all"), p.frame("hot")
        ok = st["icicle"] and root["y"] == 0 and hot["y"] > root["y"]
        b.screenshot(os.path.join(out, "small-icicle.png"))
        b.eval("document.querySelector('input[value=flame]').click()")
        flame_root = p.frame("all")
        ok = ok and flame_root["y"] > p.frame("hot")["y"]
        return ok, "icicle: root at y=%d, hot at y=%d; flame: root at y=%d" % (
            root["y"], hot["y"], flame_root["y"])

    def table():
        b.eval("document.querySelector('#functions th[data-col=\"5\"]').click()")
        first = b.eval("document.querySelector('#functions tbody tr').innerText")
        return first.split("\t")[0] == "main", "sorted by Total %%: first row %r" % first

    check("root_and_share", widths)
    check("tooltip", hover)
    check("click_zoom", zoom)
    check("reset", reset)
    check("search", search)
    check("sandwich", sandwich)
    check("orientation", icicle)
    check("table_sort", table)
    result(b.eval("document.getElementById('labels').hidden") is True, "no_label_panel",
           "a profile without labels shows no label panel")
    b.screenshot(os.path.join(out, "small.png"))
    problems = p.problems()
    result(not problems, "small_clean", "; ".join(problems) or
           "no script errors, no request beyond the file itself")


def diff_page(b, out, path, diff_text):
    p = Page(b, path)

    def colours():
        px = {n: tuple(p.pixel(p.frame(n))) for n in ("hot", "cold", "parse", "main")}
        r, g, bl = px["hot"]
        red = r > 150 and g < 110 and bl < 110
        r, g, bl = px["cold"]
        blue = bl > 150 and r < 110
        r, g, bl = px["parse"]
        light_blue = bl > r + 20 and r > 110
        r, g, bl = px["main"]
        grey = abs(r - bl) < 12 and r > 180
        return red and blue and light_blue and grey, \
            "hot grew 40%%->75%%: %s, cold shrank 40%%->15%%: %s, parse shrank less: %s, " \
            "main unchanged: %s" % (px["hot"], px["cold"], px["parse"], px["main"])

    def table():
        want = re.search(r"^ *\S+ +\S+ +(\S+) .*  hot$", diff_text, re.M).group(1)
        row = b.eval("Array.from(document.querySelectorAll('#functions tbody tr'))"
                     ".map((r) => r.innerText.split('\\t')).find((c) => c[0] === 'hot')")
        got = row[-1]
        return got == want and "grew" in b.eval(
            "document.querySelector('#functions tbody tr[data-func] td:last-child').className"), \
            "hot's Total \u0394 in the page %s, in kiln diff --format text %s" % (got, want)

    check("diff_colours", colours)
    check("diff_table", table)
    b.screenshot(os.path.join(out, "diff.png"))
    problems = p.problems()
    result(not problems, "diff_clean", "; ".join(problems) or "no script errors, no requests")


def empty_page(b, out, path):
    p = Page(b, path)
    shown = b.eval("!document.getElementById('empty').hidden")
    total = p.kiln("total")
    b.screenshot(os.path.join(out, "empty.png"))
    problems = p.problems()
    result(shown and total == 0 and not problems, "empty_page",
           "'holds no samples' shown: %s, total %s, problems: %s" % (shown, total, problems or "none"))


def pods_page(b, out, path):
    """web-a: hot 60, parse 15; web-b: cold 20, hot 5; both namespace=shop."""
    p = Page(b, path)

    def values():
        """The panel's rows as shown: {label: [(value, share text, box)]}."""
        return b.eval("""(() => {
            const out = {};
            for (const li of document.querySelectorAll('#label-list li[data-label]')) {
              const r = li.getBoundingClientRect();
              (out[li.dataset.label] = out[li.dataset.label] || []).push([li.dataset.value,
                li.querySelector('.share').textContent, li.className,
                r.left + r.width / 2, r.top + r.height / 2]);
            }
            return out;
        })()""")

    def click_value(label, value):
        row = next(r for r in values()[label] if r[0] == value)
        b.click(row[3], row[4])

    def panel():
        shown = b.eval("!document.getElementById('labels').hidden")
        rows = values()
        same = b.eval("(document.querySelector('#label-list .same') || {}).innerText || ''")
        pods = [(v, share) for v, share, *_ in rows.get("pod", [])]
        ok = (shown and pods == [("web-a", "75.00%"), ("web-b", "25.00%")] and
              "namespace" not in rows and "namespace=shop" in same)
        b.screenshot(os.path.join(out, "pods.png"))
        return ok, "panel shown: %s; pod values %s; single-valued: %r" % (shown, pods, same)

    def filtered():
        click_value("pod", "web-b")
        st = p.state()
        w = st["width"]
        root, hot = p.frame("all"), p.frame("hot")
        status = b.eval("document.getElementById('label-filter').innerText")
        on = [r[0] for r in values()["pod"] if " on" in r[2]]
        ok = (st["filter"] == "pod=web-b" and st["zoomTotal"] == 25 and st["total"] == 25 and
              near(root["w"], w, 0.5) and near(hot["w"], w * 5 / 25, 1.0) and not p.frames("parse") and
              st["tableRows"] == 5 and on == ["web-b"] and "Show all" in status)
        b.screenshot(os.path.join(out, "pods-web-b.png"))
        return ok, "clicked web-b: filter %r, flame graph total %s (want 25 of 100), hot %.1f of %d px " \
            "(want %.1f), parse drawn: %s, table rows %d, marked %s; %r" % (
                st["filter"], st["zoomTotal"], hot["w"], w, w * 5 / 25, bool(p.frames("parse")),
                st["tableRows"], on, status)

    def compared():
        click_value("pod", "web-a")
        st = p.state()
        px = {n: tuple(p.pixel(p.frame(n))) for n in ("hot", "parse", "work", "main")}
        r, g, bl = px["hot"]            # 20% of web-b, 80% of web-a: grew
        red = r > 150 and g < 110 and bl < 110
        r, g, bl = px["work"]           # 100% -> 80%: shrank
        blue = bl > r + 20
        r, g, bl = px["main"]           # 100% in both
        grey = abs(r - bl) < 12 and r > 180
        roles = sorted((r[0], r[2].split()[-1]) for r in values()["pod"])
        row = b.eval("Array.from(document.querySelectorAll('#functions tbody tr'))"
                     ".map((r) => r.innerText.split('\\t')).find((c) => c[0] === 'hot')")
        ok = (st["diff"] and st["filter"] == "pod=web-b \u2192 pod=web-a" and st["total"] == 75 and
              st["baseTotal"] == 25 and red and blue and grey and not p.frames("cold") and
              roles == [("web-a", "new"), ("web-b", "base")] and row[-1] == "+60.00")
        b.screenshot(os.path.join(out, "pods-diff.png"))
        return ok, "then web-a: diff %s (%r), base %s new %s; hot %s, work %s, main %s; " \
            "marked %s; hot's Total \u0394 %s (want +60.00)" % (
                st["diff"], st["filter"], st["baseTotal"], st["total"], px["hot"], px["work"],
                px["main"], roles, row[-1] if row else None)

    def show_all():
        b.eval("document.getElementById('label-all').click()")
        st = p.state()
        ok = (st["filter"] is None and not st["diff"] and st["zoomTotal"] == 100 and
              p.frames("parse") and p.frames("cold") and st["tableRows"] == 6)
        return ok, "Show all: filter %r, diff %s, total %s, table rows %d" % (
            st["filter"], st["diff"], st["zoomTotal"], st["tableRows"])

    check("labels_panel", panel)
    check("label_filter", filtered)
    check("label_diff", compared)
    check("label_show_all", show_all)
    problems = p.problems()
    result(not problems, "labels_clean", "; ".join(problems) or "no script errors, no requests")


def big_page(b, out, path):
    p = Page(b, path)
    nodes = p.kiln("nodes")
    timing = p.kiln("timing")
    nav = b.eval("performance.getEntriesByType('navigation')[0].toJSON()")
    print("MEASURE big page: %d nodes, %d bytes; load event after %.0f ms (DevTools wall %.0f ms); "
          "script: JSON %.0f ms, tree %.0f ms, ready %.0f ms after it started" % (
              nodes, os.path.getsize(path), nav["loadEventEnd"], 1000 * p.load_s,
              timing["parse"], timing["build"], timing["ready"]))

    def widest(depth):
        fs = [f for f in p.frames() if f["depth"] == depth]
        return max(fs, key=lambda f: f["w"]) if fs else None

    # real clicks, each on the widest frame a few rows further down
    clicks = []
    for depth in (1, 3, 6, 10):
        f = widest(depth)
        if not f:
            break
        start = time.monotonic()
        p.click_frame(f)
        b.eval("new Promise((ok) => requestAnimationFrame(() => ok(true)))")
        clicks.append(1000 * (time.monotonic() - start))
        zoomed = p.state()["zoomNode"]
        if zoomed != f["node"]:
            result(False, "big_page", "clicked node %d at depth %d, zoomed to %d" % (f["node"], depth, zoomed))
            return
    # redraw times of zooms in and out, measured in the page
    p.kiln("zoomTo(0)")
    targets = [f["node"] for f in (widest(d) for d in (1, 2, 4, 8)) if f]
    times = [p.kiln("zoomTo(%d)" % n) for t in targets for n in (t, 0)]
    b.screenshot(os.path.join(out, "big.png"))
    print("MEASURE big page zoom: redraw %.1f ms median, %.1f ms max over %d zooms in and out; "
          "a click to the next frame drawn %.0f ms median (DevTools round trips included)" % (
              statistics.median(times), max(times), len(times), statistics.median(clicks)))
    problems = p.problems()
    result(nodes >= 100000 and len(clicks) == 4 and not problems, "big_page",
           "%d nodes open, and zoom by click at depths 1, 3, 6, 10; problems: %s" % (
               nodes, problems or "none"))


def page_nodes(path):
    with open(path) as f:
        depth = re.search(r'"depth":\[([^\]]*)\]', f.read()).group(1)
    return depth.count(",") + 1


def sizes(paths):
    """Bytes per added node must stay put as the tree grows: linear."""
    points = sorted((page_nodes(p), os.path.getsize(p)) for p in paths)
    for n, size in points:
        print("MEASURE page size: %7d nodes, %9d bytes, %.1f bytes/node" % (n, size, size / n))
    slopes = [(s2 - s1) / (n2 - n1) for (n1, s1), (n2, s2) in zip(points, points[1:])]
    ok = len(slopes) >= 2 and max(slopes) <= 1.25 * min(slopes)
    result(ok, "size_linear", "bytes per added node between successive sizes: %s" %
           ", ".join("%.2f" % s for s in slopes))


def main():
    out, diff_text_path, small, diff, empty, pods, big = sys.argv[1:8]
    with open(diff_text_path) as f:
        diff_text = f.read()
    sizes(sys.argv[8:])
    b = Browser()
    try:
        small_page(b, out, small)
        diff_page(b, out, diff, diff_text)
        empty_page(b, out, empty)
        pods_page(b, out, pods)
        big_page(b, out, big)
    finally:
        b.close()
    print("screenshots in %s: %s" % (out, " ".join(sorted(f for f in os.listdir(out) if f.endswith(".png")))))
    # a check that vanished (an exception swallowed, a branch skipped)
    # must not pass unseen
    result(passed + failed == EXPECTED, "results",
           "%d results, %d expected" % (passed + failed, EXPECTED))
    print("%d passed, %d failed, 0 skipped" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
