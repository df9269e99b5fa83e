// SPDX-License-Identifier: BSD-2-Clause
/* kiln flame graph page.
 *
 * The profile is the JSON block #kiln-data written by user/profile/html.c:
 * a tree in depth-first order (per node: depth, function, samples ending
 * there; "base" too on a diff page) and the functions' names, modules,
 * source files and classes through one string table. Everything is derived from that here:
 * subtree totals and offsets once (Tree), then every drawing walks only the
 * visible part of one subtree, skipping anything narrower than half a pixel
 * together with its children. Frames are drawn on canvases, never as one
 * DOM node each, so a tree of 100 000 nodes stays quick to open and zoom.
 *
 * window.kiln exposes the page's state for tests and scripting. */
'use strict';

(function () {
  const ROW = 17;                 /* px per frame row */
  const MIN_WIDTH = 0.5;          /* px: narrower frames are not drawn */
  const MAX_ROWS = Math.floor(30000 / ROW);       /* canvas height limit */
  const TABLE_ROWS = 300;
  const MATCH_COLOR = '#e040c8';
  const t0 = performance.now();

  const data = JSON.parse(document.getElementById('kiln-data').textContent);
  const tParsed = performance.now();
  const isDiff = data.diff === true;
  const str = data.strings;
  const nfuncs = data.fname.length;
  const funcName = data.fname.map((i) => str[i]);
  const funcModule = data.fmod.map((i) => str[i]);
  const funcFile = data.ffile.map((i) => str[i]);
  const funcClass = data.fcls.map((i) => data.classes[i]);
  const lowerNames = funcName.map((s) => s.toLowerCase());

  /* A tree in depth-first order: node i's subtree is i .. end[i] - 1, the
   * root is node 0. total and x (the offset from the left of the root, in
   * samples) come from self; baseTotal from base, when there is one. */
  class Tree {
    constructor(depth, func, self, base) {
      const n = depth.length;
      this.n = n;
      this.depth = Int32Array.from(depth);
      this.func = Int32Array.from(func);
      this.self = Float64Array.from(self);
      this.base = base ? Float64Array.from(base) : null;
      this.parent = new Int32Array(n);
      this.end = new Int32Array(n);
      this.total = new Float64Array(n);
      this.baseTotal = base ? new Float64Array(n) : null;
      this.x = new Float64Array(n);
      this.maxDepth = new Int32Array(n);
      const path = [];
      for (let i = 0; i < n; i++) {
        const d = this.depth[i];
        this.parent[i] = d ? path[d - 1] : -1;
        path[d] = i;
      }
      for (let i = n - 1; i >= 0; i--) {
        const p = this.parent[i];
        this.total[i] += this.self[i];
        if (base) this.baseTotal[i] += this.base[i];
        this.end[i] += i + 1;           /* holds the sizes of the children so far */
        this.maxDepth[i] = Math.max(this.maxDepth[i], this.depth[i]);
        if (p >= 0) {
          this.total[p] += this.total[i];
          if (base) this.baseTotal[p] += this.baseTotal[i];
          this.end[p] += this.end[i] - i;
          this.maxDepth[p] = Math.max(this.maxDepth[p], this.maxDepth[i]);
        }
      }
      /* children are laid out left to right from their parent's left edge */
      const cursor = new Float64Array(n);
      for (let i = 1; i < n; i++) {
        const p = this.parent[i];
        this.x[i] = cursor[p];
        cursor[p] += this.total[i];
        cursor[i] = this.x[i];
      }
    }

    /* The child of node containing sample offset s, or -1. */
    childAt(node, s) {
      for (let c = node + 1; c < this.end[node]; c = this.end[c]) {
        if (s >= this.x[c] && s < this.x[c] + this.total[c]) return c;
      }
      return -1;
    }

    /* Per function: samples ending in it, and samples with it on the stack,
     * counted once however deep it recurses. */
    functionTotals() {
      const self = new Float64Array(nfuncs), total = new Float64Array(nfuncs);
      const baseSelf = new Float64Array(nfuncs), baseTotal = new Float64Array(nfuncs);
      const active = new Int32Array(nfuncs), path = [];
      for (let i = 1; i < this.n; i++) {
        const f = this.func[i];
        while (path.length >= this.depth[i]) active[path.pop()]--;
        self[f] += this.self[i];
        if (this.base) baseSelf[f] += this.base[i];
        if (!active[f]) {
          total[f] += this.total[i];
          if (this.base) baseTotal[f] += this.baseTotal[i];
        }
        active[f]++;
        path.push(f);
      }
      return { self, total, baseSelf, baseTotal };
    }

    /* Nodes of function f with no f above them. */
    outermost(f) {
      const out = [];
      for (let i = 1; i < this.n;) {
        if (this.func[i] === f) {
          out.push(i);
          i = this.end[i];
        } else {
          i++;
        }
      }
      return out;
    }
  }

  /* Builds a tree from paths added one node at a time, then sorts siblings
   * by name into depth-first order, as html.c does for the main tree. */
  class TreeBuilder {
    constructor(rootFunc) {
      this.func = [rootFunc];
      this.kids = [new Map()];
      this.self = [0];
      this.base = [0];
    }

    child(node, f) {
      let c = this.kids[node].get(f);
      if (c === undefined) {
        c = this.func.length;
        this.func.push(f);
        this.kids.push(new Map());
        this.self.push(0);
        this.base.push(0);
        this.kids[node].set(f, c);
      }
      return c;
    }

    build(withBase) {
      const depth = [], func = [], self = [], base = [];
      const stack = [[0, 0]];
      while (stack.length) {
        const [node, d] = stack.pop();
        depth.push(d);
        func.push(this.func[node]);
        self.push(this.self[node]);
        base.push(this.base[node]);
        const kids = [...this.kids[node].values()].sort(
          (a, b) => compareNames(this.func[b], this.func[a]));
        for (const k of kids) stack.push([k, d + 1]);
      }
      return new Tree(depth, func, self, withBase ? base : null);
    }
  }

  function compareNames(fa, fb) {
    const a = funcName[fa], b = funcName[fb];
    return a < b ? -1 : a > b ? 1 : 0;
  }

  const tree = new Tree(data.depth, data.func, data.self, isDiff ? data.base : null);
  const grand = tree.total[0];
  const baseGrand = isDiff ? tree.baseTotal[0] : 0;
  const perFunc = tree.functionTotals();
  const tBuilt = performance.now();

  /* ---- formatting ---- */

  const fmtInt = (v) => Math.round(v).toLocaleString('en-US');
  const pct = (v, whole) => (whole ? (100 * v) / whole : 0);
  const fmtPct = (v) => v.toFixed(2) + '%';
  const fmtPoints = (v) => (v > 0 ? '+' : '') + v.toFixed(2);
  const esc = (s) => s.replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');

  function baseName(path) {
    const i = path.lastIndexOf('/');
    return i >= 0 ? path.slice(i + 1) : path;
  }

  /* ---- colours ---- */

  function hash(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return (h >>> 0) / 4294967296;
  }

  /* Per class: hue range, saturation, lightness range. */
  const PALETTE = {
    process: [30, 30, 8, 70, 78],
    kernel: [190, 215, 55, 62, 72],
    libc: [95, 140, 45, 55, 65],
    program: [5, 45, 80, 58, 68],
    library: [265, 295, 45, 70, 78],
    unknown: [45, 60, 60, 70, 80],
  };
  const CLASS_LABEL = {
    process: 'process',
    kernel: 'kernel',
    libc: 'libc',
    program: "the program's own code",
    library: 'other libraries',
    unknown: 'module unknown',
  };

  function classColor(cls, h) {
    const [h0, h1, s, l0, l1] = PALETTE[cls] || PALETTE.unknown;
    return `hsl(${(h0 + (h1 - h0) * h).toFixed(0)},${s}%,${(l0 + (l1 - l0) * h).toFixed(0)}%)`;
  }
  const funcColor = funcName.map((name, f) => classColor(funcClass[f], hash(name)));

  /* Diff: a frame's share of NEW minus its share of BASE, in percentage
   * points; full colour at the largest change (at least one point). */
  const DIFF_STEPS = 24;
  const diffScale = (() => {
    let m = 1;
    for (let i = 1; i < tree.n && isDiff; i++) {
      if (tree.total[i] > 0) m = Math.max(m, Math.abs(frameDelta(tree, i)));
    }
    return m;
  })();
  const mix = (a, b, t) => a.map((v, i) => Math.round(v + (b[i] - v) * t));
  const NEUTRAL = [224, 224, 224], RED = [215, 48, 31], BLUE = [43, 108, 212];
  const ramp = (to) => Array.from({ length: DIFF_STEPS + 1 },
    (_, k) => `rgb(${mix(NEUTRAL, to, k / DIFF_STEPS).join(',')})`);
  const GREW = ramp(RED), SHRANK = ramp(BLUE);

  function frameDelta(t, i) {
    return pct(t.total[i], grand) - pct(t.baseTotal[i], baseGrand);
  }

  function frameColor(t, i) {
    const f = t.func[i];
    if (matched && matched[f]) return MATCH_COLOR;
    if (!isDiff) return funcColor[f];
    const d = frameDelta(t, i);
    const k = Math.min(DIFF_STEPS, Math.round((Math.abs(d) / diffScale) * DIFF_STEPS));
    return d >= 0 ? GREW[k] : SHRANK[k];
  }

  /* ---- flame graph view: one canvas, one tree ---- */

  let charWidth = 7;

  class FlameView {
    constructor(el, tree, opts) {
      this.el = el;
      this.canvas = el.querySelector('canvas');
      this.ctx = this.canvas.getContext('2d');
      this.icicle = !!opts.icicle;
      this.onZoom = opts.onZoom || (() => {});
      this.setTree(tree);
      this.canvas.addEventListener('mousemove', (e) => this.hover(e));
      this.canvas.addEventListener('mouseleave', () => hideTooltip());
      this.canvas.addEventListener('click', (e) => this.click(e));
    }

    setTree(t) {
      this.tree = t;
      this.zoom = 0;
      this.drawn = { node: [], x: [], w: [], fill: [] };
    }

    rows() {
      return Math.min(MAX_ROWS, this.tree.maxDepth[this.zoom] + 1);
    }

    rowTop(depth, rows) {
      return (this.icicle ? depth : rows - 1 - depth) * ROW;
    }

    draw() {
      const t = this.tree, z = this.zoom;
      const width = this.el.clientWidth, rows = this.rows();
      const height = rows * ROW, dpr = window.devicePixelRatio || 1;
      if (this.canvas.width !== Math.round(width * dpr) || this.canvas.height !== Math.round(height * dpr)) {
        this.canvas.width = Math.round(width * dpr);
        this.canvas.height = Math.round(height * dpr);
        this.canvas.style.height = height + 'px';
      }
      const ctx = this.ctx;
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, width, height);
      ctx.font = '12px ui-monospace, Menlo, Consolas, monospace';
      ctx.textBaseline = 'middle';
      charWidth = ctx.measureText('mmmmmmmmmm').width / 10;
      this.drawn = { node: [], x: [], w: [], fill: [] };
      this.width = width;
      if (!t.total[z]) return;
      const scale = width / t.total[z], x0 = t.x[z];
      for (let a = t.parent[z]; a >= 0; a = t.parent[a]) this.frame(a, 0, width, rows, true);
      for (let i = z, end = t.end[z]; i < end;) {
        const w = t.total[i] * scale;
        if (w < MIN_WIDTH || t.depth[i] >= rows) {
          i = t.end[i];
          continue;
        }
        this.frame(i, (t.x[i] - x0) * scale, w, rows, false);
        i++;
      }
    }

    frame(i, x, w, rows, dim) {
      const ctx = this.ctx, y = this.rowTop(this.tree.depth[i], rows);
      const fill = frameColor(this.tree, i);
      ctx.fillStyle = fill;
      ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
      if (dim) {
        ctx.fillStyle = 'rgba(255,255,255,0.45)';
        ctx.fillRect(x, y, w, ROW - 1);
      }
      const d = this.drawn;
      d.node.push(i);
      d.x.push(x);
      d.w.push(w);
      d.fill.push(fill);
      const fit = Math.floor((w - 6) / charWidth);
      if (fit < 3) return;
      const name = funcName[this.tree.func[i]];
      ctx.fillStyle = '#111';
      ctx.fillText(name.length <= fit ? name : name.slice(0, fit - 1) + '\u2026', x + 3, y + ROW / 2);
    }

    /* The node under canvas point (px, py), or -1. */
    nodeAt(px, py) {
      const t = this.tree, z = this.zoom, rows = this.rows();
      const row = Math.floor(py / ROW);
      const depth = this.icicle ? row : rows - 1 - row;
      if (depth < 0 || depth >= rows || !t.total[z]) return -1;
      if (depth < t.depth[z]) {
        let a = z;
        while (t.depth[a] > depth) a = t.parent[a];
        return a;
      }
      const s = t.x[z] + (px / this.width) * t.total[z];
      let node = z;
      while (node >= 0 && t.depth[node] < depth) node = t.childAt(node, s);
      if (node < 0 || t.total[node] * (this.width / t.total[z]) < MIN_WIDTH) return -1;
      return node;
    }

    eventNode(e) {
      const r = this.canvas.getBoundingClientRect();
      return this.nodeAt(e.clientX - r.left, e.clientY - r.top);
    }

    hover(e) {
      const node = this.eventNode(e);
      if (node < 0) {
        hideTooltip();
        return;
      }
      showTooltip(e, this.tree, node, this.zoom);
    }

    click(e) {
      const node = this.eventNode(e);
      if (node < 0) return;
      if (e.shiftKey) {
        if (node > 0 || this.tree !== tree) select(this.tree.func[node]);
        return;
      }
      this.zoomTo(node);
    }

    zoomTo(node) {
      this.zoom = node;
      this.draw();
      this.onZoom(node);
    }

    /* Drawn frames (of function name, or all): canvas box, viewport
     * centre, fill. */
    frames(name) {
      const out = [], d = this.drawn, r = this.canvas.getBoundingClientRect();
      const rows = this.rows();
      for (let k = 0; k < d.node.length; k++) {
        const node = d.node[k], fname = funcName[this.tree.func[node]];
        if (name !== undefined && fname !== name) continue;
        const depth = this.tree.depth[node], y = this.rowTop(depth, rows);
        out.push({
          node, name: fname, depth, x: d.x[k], y, w: d.w[k], h: ROW - 1, fill: d.fill[k],
          cx: r.left + d.x[k] + d.w[k] / 2, cy: r.top + y + ROW / 2,
        });
      }
      return out;
    }
  }

  /* ---- tooltip ---- */

  const tooltip = document.getElementById('tooltip');

  function hideTooltip() {
    tooltip.hidden = true;
  }

  function showTooltip(e, t, node, zoom) {
    const f = t.func[node];
    const mod = funcModule[f];
    const lines = [`<div class="fn">${esc(funcName[f])}</div>`,
      `<div class="dim">${esc((mod ? baseName(mod) + ' \u00b7 ' : '') + CLASS_LABEL[funcClass[f]])}</div>`];
    if (funcFile[f]) lines.push(`<div class="dim">${esc(funcFile[f])}</div>`);
    const share = (v) => `${fmtInt(v)} ${esc(data.unit)} (${fmtPct(pct(v, grand))} of all` +
      (zoom > 0 && t === tree ? `, ${fmtPct(pct(v, t.total[zoom]))} of the zoomed frame` : '') + ')';
    lines.push(`<div>total: ${share(t.total[node])}</div>`, `<div>self: ${share(t.self[node])}</div>`);
    if (isDiff) {
      const b = pct(t.baseTotal[node], baseGrand), n = pct(t.total[node], grand);
      const bs = pct(t.base[node], baseGrand), ns = pct(t.self[node], grand);
      lines.push(`<div>total share: ${fmtPct(b)} \u2192 ${fmtPct(n)} (${fmtPoints(n - b)} points)</div>`,
        `<div>self share: ${fmtPct(bs)} \u2192 ${fmtPct(ns)} (${fmtPoints(ns - bs)} points)</div>`);
    }
    tooltip.innerHTML = lines.join('');
    tooltip.hidden = false;
    const pad = 14, w = tooltip.offsetWidth, h = tooltip.offsetHeight;
    const x = e.clientX + pad + w > window.innerWidth ? e.clientX - pad - w : e.clientX + pad;
    const y = e.clientY + pad + h > window.innerHeight ? e.clientY - pad - h : e.clientY + pad;
    tooltip.style.left = Math.max(0, x) + 'px';
    tooltip.style.top = Math.max(0, y) + 'px';
  }

  /* ---- the main view, breadcrumb, orientation ---- */

  const crumbs = document.getElementById('crumbs');
  const main = new FlameView(document.getElementById('flame'), tree, { onZoom: showCrumbs });

  function showCrumbs(node) {
    const path = [];
    for (let a = node; a >= 0; a = tree.parent[a]) path.unshift(a);
    crumbs.innerHTML = path.map((a, k) => (k === path.length - 1 ?
      `<span class="here">${esc(funcName[tree.func[a]])}</span>` :
      `<a data-node="${a}">${esc(funcName[tree.func[a]])}</a>`)).join('<span class="sep">\u203a</span>');
  }
  crumbs.addEventListener('click', (e) => {
    const a = e.target.closest('a');
    if (a) main.zoomTo(Number(a.dataset.node));
  });
  document.getElementById('reset').addEventListener('click', () => main.zoomTo(0));
  for (const radio of document.querySelectorAll('input[name="orient"]')) {
    radio.addEventListener('change', () => {
      main.icicle = radio.value === 'icicle' && radio.checked;
      main.draw();
    });
  }

  /* ---- search ---- */

  const search = document.getElementById('search');
  const matchInfo = document.getElementById('matches');
  let matched = null;             /* per function: 1 when its name matches */
  let matchedSamples = 0;

  function runSearch() {
    const q = search.value.trim().toLowerCase();
    matched = null;
    matchedSamples = 0;
    matchInfo.textContent = '';
    if (q) {
      matched = new Uint8Array(nfuncs);
      let nmatch = 0;
      for (let f = 0; f < nfuncs; f++) {
        if (lowerNames[f].includes(q)) {
          matched[f] = 1;
          nmatch++;
        }
      }
      /* outermost matching frames only, so nested matches count once */
      for (let i = 1; i < tree.n;) {
        if (matched[tree.func[i]]) {
          matchedSamples += tree.total[i];
          i = tree.end[i];
        } else {
          i++;
        }
      }
      matchInfo.textContent = `${nmatch} function${nmatch === 1 ? '' : 's'} match: ` +
        `${fmtInt(matchedSamples)} ${data.unit}, ${fmtPct(pct(matchedSamples, grand))} of all`;
    }
    redrawAll();
    renderTable();
  }
  search.addEventListener('input', runSearch);
  document.addEventListener('keydown', (e) => {
    if (e.key === '/' && document.activeElement !== search) {
      e.preventDefault();
      search.focus();
    } else if (e.key === 'Escape') {
      if (document.activeElement === search && search.value) {
        search.value = '';
        runSearch();
      } else {
        main.zoomTo(0);
      }
    }
  });

  /* ---- the table of functions ---- */

  const tableHead = document.querySelector('#functions thead');
  const tableBody = document.querySelector('#functions tbody');
  const tableNote = document.getElementById('table-note');
  const rowsAll = [];
  for (let f = 0; f < nfuncs; f++) {
    if (perFunc.total[f] > 0 || perFunc.baseTotal[f] > 0) rowsAll.push(f);
  }
  const selfPct = (f) => pct(perFunc.self[f], grand);
  const totalPct = (f) => pct(perFunc.total[f], grand);
  const baseSelfPct = (f) => pct(perFunc.baseSelf[f], baseGrand);
  const baseTotalPct = (f) => pct(perFunc.baseTotal[f], baseGrand);
  /* [header, value of function f, text of that value, numeric, css class] */
  const COLUMNS = isDiff ? [
    ['Function', (f) => funcName[f], (v) => v, false],
    ['Module', (f) => baseName(funcModule[f]), (v) => v, false],
    ['Self base', baseSelfPct, fmtPct, true],
    ['Self new', selfPct, fmtPct, true],
    ['Self \u0394', (f) => selfPct(f) - baseSelfPct(f), fmtPoints, true, true],
    ['Total base', baseTotalPct, fmtPct, true],
    ['Total new', totalPct, fmtPct, true],
    ['Total \u0394', (f) => totalPct(f) - baseTotalPct(f), fmtPoints, true, true],
  ] : [
    ['Function', (f) => funcName[f], (v) => v, false],
    ['Module', (f) => baseName(funcModule[f]), (v) => v, false],
    ['Self', (f) => perFunc.self[f], fmtInt, true],
    ['Self %', selfPct, fmtPct, true],
    ['Total', (f) => perFunc.total[f], fmtInt, true],
    ['Total %', totalPct, fmtPct, true],
  ];
  let sortColumn = isDiff ? COLUMNS.length - 1 : 2;
  let sortAscending = false;
  let selected = -1;

  function sortedRows() {
    const value = COLUMNS[sortColumn][1], numeric = COLUMNS[sortColumn][3];
    const keys = new Map(rowsAll.map((f) => [f, value(f)]));
    const sign = sortAscending ? 1 : -1;
    const rows = matched ? rowsAll.filter((f) => matched[f]) : rowsAll.slice();
    rows.sort((a, b) => {
      const ka = keys.get(a), kb = keys.get(b);
      if (ka !== kb) {
        if (numeric) return sign * (ka - kb);
        return sign * (ka < kb ? -1 : 1);
      }
      return compareNames(a, b);
    });
    return rows;
  }

  function renderTable() {
    tableHead.innerHTML = '<tr>' + COLUMNS.map((c, k) =>
      `<th data-col="${k}" class="${c[3] ? 'num' : ''}${k === sortColumn ? ' sorted' + (sortAscending ? ' asc' : '') : ''}">${c[0]}</th>`).join('') + '</tr>';
    const rows = sortedRows();
    const shown = rows.slice(0, TABLE_ROWS);
    tableBody.innerHTML = shown.map((f) => `<tr data-func="${f}"${f === selected ? ' class="selected"' : ''}>` +
      COLUMNS.map((c, k) => {
        const v = c[1](f);
        const cls = (c[3] ? 'num' : 'name') + (c[4] && v > 0.005 ? ' grew' : c[4] && v < -0.005 ? ' shrank' : '');
        return `<td class="${cls}"${k === 0 ? ` title="${esc(funcName[f])}"` : ''}>${esc(String(c[2](v)))}</td>`;
      }).join('') + '</tr>').join('');
    tableNote.textContent = rows.length > shown.length ?
      `The first ${shown.length} of ${rows.length} functions; search to narrow them down.` :
      `${rows.length} function${rows.length === 1 ? '' : 's'}.`;
  }
  tableHead.addEventListener('click', (e) => {
    const th = e.target.closest('th');
    if (!th) return;
    const k = Number(th.dataset.col);
    sortAscending = k === sortColumn ? !sortAscending : !COLUMNS[k][3];
    sortColumn = k;
    renderTable();
  });
  tableBody.addEventListener('click', (e) => {
    const tr = e.target.closest('tr');
    if (tr) select(Number(tr.dataset.func));
  });

  /* ---- sandwich: callers above the function, callees below ---- */

  const sandwichName = document.getElementById('sandwich-name');
  const sandwichSummary = document.getElementById('sandwich-summary');
  const callers = new FlameView(document.getElementById('callers'), new TreeBuilder(0).build(false), {});
  const callees = new FlameView(document.getElementById('callees'), new TreeBuilder(0).build(false), { icicle: true });

  /* Callers: every outermost frame of f with its whole stack above it,
   * reversed, so f is the root and its callers grow upwards. */
  function callersTree(f) {
    const b = new TreeBuilder(f);
    for (const n of tree.outermost(f)) {
      let node = 0;
      for (let a = tree.parent[n]; a > 0; a = tree.parent[a]) node = b.child(node, tree.func[a]);
      b.self[node] += tree.total[n];
      if (isDiff) b.base[node] += tree.baseTotal[n];
    }
    return b.build(isDiff);
  }

  /* Callees: the subtrees of every outermost frame of f, merged. */
  function calleesTree(f) {
    const b = new TreeBuilder(f), map = new Int32Array(tree.n);
    for (const n of tree.outermost(f)) {
      map[n] = 0;
      b.self[0] += tree.self[n];
      if (isDiff) b.base[0] += tree.base[n];
      for (let i = n + 1; i < tree.end[n]; i++) {
        const c = b.child(map[tree.parent[i]], tree.func[i]);
        map[i] = c;
        b.self[c] += tree.self[i];
        if (isDiff) b.base[c] += tree.base[i];
      }
    }
    return b.build(isDiff);
  }

  function select(f) {
    selected = f;
    sandwichName.textContent = funcName[f];
    sandwichSummary.textContent = `self ${fmtInt(perFunc.self[f])} ${data.unit} (${fmtPct(selfPct(f))}), ` +
      `total ${fmtInt(perFunc.total[f])} (${fmtPct(totalPct(f))}); ${funcModule[f] || 'module unknown'}` +
      (funcFile[f] ? `; ${funcFile[f]}` : '');
    callers.setTree(callersTree(f));
    callees.setTree(calleesTree(f));
    callers.draw();
    callees.draw();
    renderTable();
  }

  /* ---- header, legend, start ---- */

  function showHeader() {
    document.getElementById('title').textContent = data.title;
    const parts = [];
    if (isDiff) {
      parts.push(`base ${fmtInt(baseGrand)} ${data.unit}, new ${fmtInt(grand)} ${data.unit}`);
    } else {
      parts.push(`${fmtInt(grand)} ${data.unit}`);
    }
    if (data.time > 0) {
      parts.push('from ' + new Date(data.time / 1e6).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC'));
    }
    if (data.duration > 0) parts.push(`${(data.duration / 1e9).toFixed(1)} s`);
    parts.push(`${fmtInt(rowsAll.length)} functions, ${fmtInt(tree.n)} frames`);
    document.getElementById('summary').textContent = parts.join(' \u00b7 ');
  }

  function showLegend() {
    const legend = document.getElementById('legend');
    const swatch = (color, label) => `<span><span class="swatch" style="background:${color}"></span>${esc(label)}</span>`;
    if (isDiff) {
      legend.innerHTML = swatch(SHRANK[DIFF_STEPS], `share shrank (${diffScale.toFixed(1)} points or more)`) +
        swatch(`rgb(${NEUTRAL.join(',')})`, 'unchanged') +
        swatch(GREW[DIFF_STEPS], `share grew (${diffScale.toFixed(1)} points or more)`) +
        swatch(MATCH_COLOR, 'search match');
      return;
    }
    const present = new Set(funcClass);
    legend.innerHTML = Object.keys(PALETTE).filter((c) => present.has(c))
      .map((c) => swatch(classColor(c, 0.5), CLASS_LABEL[c])).join('') + swatch(MATCH_COLOR, 'search match');
  }

  function redrawAll() {
    main.draw();
    if (selected >= 0) {
      callers.draw();
      callees.draw();
    }
  }

  showHeader();
  showLegend();
  showCrumbs(0);
  const empty = !grand;
  document.getElementById('empty').hidden = !empty;
  main.draw();
  renderTable();
  let biggest = -1;
  for (const f of rowsAll) {
    if (biggest < 0 || perFunc.self[f] > perFunc.self[biggest]) biggest = f;
  }
  if (biggest >= 0 && !empty) select(biggest);
  let lastWidth = main.el.clientWidth;
  window.addEventListener('resize', () => {
    if (main.el.clientWidth !== lastWidth) {
      lastWidth = main.el.clientWidth;
      redrawAll();
    }
  });
  const tReady = performance.now();

  /* ---- for tests and scripts ---- */

  const views = { main, callers, callees };
  window.kiln = {
    /* ms since this script started: JSON parsed, tree built, page ready */
    timing: { parse: tParsed - t0, build: tBuilt - tParsed, ready: tReady - t0 },
    nodes: tree.n,
    functions: rowsAll.length,
    total: grand,
    baseTotal: baseGrand,
    /* What is on screen now. */
    state() {
      const z = main.zoom;
      return {
        zoom: funcName[tree.func[z]],
        zoomNode: z,
        zoomTotal: tree.total[z],
        icicle: main.icicle,
        width: main.width,
        query: search.value,
        matchedSamples,
        matchedShare: pct(matchedSamples, grand),
        selected: selected >= 0 ? funcName[selected] : null,
        tableRows: tableBody.rows.length,
        crumbs: crumbs.textContent,
      };
    },
    /* Drawn frames of a function (undefined: all) in one view: "main",
     * "callers" or "callees". */
    frames(name, view) {
      return views[view || 'main'].frames(name);
    },
    /* Zooms the main view to a node and returns the ms the redraw took. */
    zoomTo(node) {
      const t = performance.now();
      main.zoomTo(node);
      return performance.now() - t;
    },
  };
})();
