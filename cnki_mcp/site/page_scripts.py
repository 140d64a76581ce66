"""The scripts the site backend runs inside CNKI's search page (Playwright `evaluate` and
`wait_for_function`): plain strings, so the page logic they carry sits apart from the Python
that drives it (cnki.py)."""

# site-rules.md §1.2: the page is usable once complete, cnkiSearch is bound and a condition box exists.
READY_JS = """() => document.readyState === 'complete' && !!window.cnkiSearch
  && typeof window.cnkiSearch.getSearchJsonInfo === 'function'
  && !!document.querySelector('#gradetxt input[data-tipid]')"""

# Clear every visible condition box, put the anchor in the first one and tell the page (bubbling change).
FILL_JS = """(anchor) => {
  const boxes = Array.from(document.querySelectorAll('#gradetxt input[data-tipid]'))
    .filter((el) => el.getBoundingClientRect().width > 0);
  boxes.forEach((el, i) => {
    el.value = i === 0 ? anchor : '';
    el.dispatchEvent(new Event('change', {bubbles: true}));
  });
  const en = document.querySelector('input[data-id=EN]');
  return {boxes: boxes.length, enChecked: !!(en && en.checked)};
}"""

# The grid POST from inside the search page: same origin, the browser's cookies, 30 s abort, 8 MiB cap.
FETCH_JS = """async ({url, body, timeoutMs, cap}) => {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  let status = 0;  // set once the answer started: an error after it is the answer breaking off
  try {
    const r = await fetch(url, {method: 'POST', credentials: 'include', body, signal: ctl.signal,
      headers: {'Content-Type': 'application/x-www-form-urlencoded; charset=UTF-8',
                'X-Requested-With': 'XMLHttpRequest'}});
    status = r.status;
    const reader = r.body.getReader();
    const chunks = [];
    let total = 0;
    for (;;) {
      const {done, value} = await reader.read();
      if (done) break;
      total += value.length;
      if (total > cap) { ctl.abort(); return {status: r.status, url: r.url, tooLarge: true}; }
      chunks.push(value);
    }
    const buf = new Uint8Array(total);
    let at = 0;
    for (const c of chunks) { buf.set(c, at); at += c.length; }
    return {status: r.status, url: r.url, text: new TextDecoder('utf-8').decode(buf)};
  } catch (e) {
    return {error: String(e), status};
  } finally {
    clearTimeout(timer);
  }
}"""

# site-rules.md §2.5: the grid's vericodeForm goes into the search page's #briefBox, in view, with the query set.
SHOW_FRAGMENT_JS = """({html, queryJson}) => {
  const box = document.querySelector('#briefBox');
  if (!box) return false;
  box.innerHTML = html;
  box.scrollIntoView({block: 'center'});
  if (window.cnkiSearch && typeof window.cnkiSearch.setQueryJson === 'function')
    window.cnkiSearch.setQueryJson(queryJson);
  return true;
}"""
