// The zlink-node dashboard: renders the snapshots pushed by /ui/events
// (server-sent events). Plain DOM and SVG, no libraries, nothing fetched
// from elsewhere.
'use strict';
(function () {
  const SVGNS = 'http://www.w3.org/2000/svg';

  // el builds an element: attrs may hold class, text, title, dataset
  // (data) and plain attributes; kids are nodes or strings.
  function el(tag, attrs, ...kids) {
    return build(document.createElement(tag), attrs, kids);
  }
  function sv(tag, attrs, ...kids) {
    return build(document.createElementNS(SVGNS, tag), attrs, kids);
  }
  function build(n, attrs, kids) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') n.textContent = String(v);
      else if (k === 'data') for (const [dk, dv] of Object.entries(v)) n.dataset[dk] = String(dv);
      else if (k === 'onclick') n.addEventListener('click', v);
      else n.setAttribute(k, String(v));
    }
    for (const c of kids.flat()) {
      if (c === undefined || c === null || c === false) continue;
      n.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return n;
  }
  const badge = (text, cls) => el('span', { class: 'badge ' + (cls || text), text });

  function fmtBytes(b) {
    if (b < 1024) return b + ' B';
    const u = ['KiB', 'MiB', 'GiB', 'TiB'];
    let i = -1;
    do { b /= 1024; i++; } while (b >= 1024 && i < u.length - 1);
    return b.toFixed(b < 10 ? 1 : 0) + ' ' + u[i];
  }
  const fmtMax = (v, f) => (v > 0 ? f(v) : '∞');
  const pct = (x) => (100 * x).toFixed(x > 0 && x < 0.1 ? 1 : 0) + '%';
  const short = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);
  function fmtDur(sec) {
    if (sec < 1e-3) return (sec * 1e6).toFixed(0) + 'µs';
    if (sec < 1) return (sec * 1e3).toFixed(sec < 0.01 ? 2 : 1) + 'ms';
    return sec.toFixed(2) + 's';
  }

  const ui = {
    toggled: new Map(), // tree path → collapsed (set by the user)
    allPaths: [],
    lat: new Map(), // mesh → recent latency samples
  };

  // ---- connection ----
  function setConn(live) {
    const c = document.getElementById('conn');
    c.textContent = live ? 'live' : 'reconnecting';
    c.className = 'conn ' + (live ? 'live' : 'down');
  }
  function connect() {
    const es = new EventSource('events');
    es.addEventListener('snapshot', (e) => {
      setConn(true);
      render(JSON.parse(e.data));
    });
    es.onerror = () => setConn(false); // EventSource retries by itself
  }

  function render(ev) {
    const snap = ev.snapshot;
    document.body.dataset.seq = ev.seq;
    document.getElementById('updated').textContent =
      'updated ' + new Date(ev.at).toLocaleTimeString() + ' · #' + ev.seq;
    document.getElementById('procstate').textContent = snap.state === 'ok' ? '' : 'process ' + snap.state;
    document.getElementById('meshes').replaceChildren(...(snap.meshes || []).map((m) => renderMesh(m, ev.at)));
    renderTree(snap.tree);
  }

  // ---- one mesh ----
  function renderMesh(m, at) {
    const st = m.status;
    const sec = el('section', { class: 'panel mesh', data: { mesh: m.mesh } });
    sec.append(el('h2', null, 'mesh ', el('code', { text: m.mesh }),
      st ? badge(st.state, st.state) : null,
      st ? el('span', { class: 'mono muted', text: 'rid ' + st.rid }) : null));
    if (m.error) sec.append(el('p', { class: 'skip', text: 'status: ' + m.error }));
    if (!st) return sec;
    sec.append(renderFacts(st, m.mesh, at));
    const left = el('div', null, el('h3', { text: 'Peers' }), renderGraph(st), renderPeerIssues(st));
    const right = el('div', null,
      el('h3', { text: 'Channels' }), ...renderChannels(m.channels),
      el('h3', { text: 'Spots' }), renderSpots(m.spots, at));
    sec.append(el('div', { class: 'mesh-grid' }, left, right));
    sec.append(el('h3', { text: 'Members' }), renderMembers(st, m.spots, at));
    return sec;
  }

  function renderFacts(st, mesh, at) {
    const c = st.counters || {};
    let errors = 0;
    for (const [k, v] of Object.entries(c)) if (k.startsWith('errors_')) errors += v;
    const f = (label, value, cls) => el('span', { class: cls }, label + ' ', el('b', { text: value }));
    // What this node served (the other side of its calls).
    let served = 0, servedErr = 0, oneWay = 0, running = 0;
    for (const s of st.served || []) {
      running += s.running || 0;
      for (const p of s.packets || []) {
        oneWay += p.sends || 0;
        for (const [r, v] of Object.entries(p.requests || {})) {
          served += v;
          if (r !== 'ok') servedErr += v;
        }
      }
    }
    return el('div', { class: 'facts' },
      f('endpoint', st.endpoint, 'mono'),
      f('object', st.object_role),
      f('inflight', st.inflight),
      st.hung ? f('hung', st.hung, 'skip') : null,
      st.admission_paused ? f('admission', 'paused', 'skip') : null,
      st.drained ? f('drained', 'yes') : null,
      f('calls', c.calls || 0), f('ok', c.ok || 0), f('errors', errors, errors ? 'skip' : ''),
      el('span', { class: 'served' }, 'served ', el('b', { class: 'served-requests', text: served }),
        ' (errors ', el('b', { text: servedErr }), ', one-way ', el('b', { text: oneWay }),
        ', running ', el('b', { text: running }), ')'),
      el('span', { class: 'peers-lost' + (c.peers_lost ? ' skip' : '') }, 'peers lost ', el('b', { text: c.peers_lost || 0 }),
        st.last_peer_lost ? ' (last ' + st.last_peer_lost.rid + ': ' + short(st.last_peer_lost.reason, 60) + ', ' + ago(st.last_peer_lost.at, at) + ')' : ''),
      f('select-one latency', latencyText(mesh, st, at)),
      st.failure ? f('failure', st.failure, 'skip') : null);
  }

  // latencyText summarizes the select-one latency of this node's calls
  // over the last ~10 s of snapshots (all time until there is a delta).
  function latencyText(mesh, st, at) {
    const buckets = st.latency || [];
    const count = buckets.reduce((a, b) => a + b.count, 0);
    const ring = ui.lat.get(mesh) || [];
    const t = Date.parse(at);
    ring.push({ t, counts: buckets.map((b) => b.count), sum: st.latency_sum_ns, count });
    while (ring.length > 1 && t - ring[0].t > 10000) ring.shift();
    ui.lat.set(mesh, ring);
    let counts = buckets.map((b) => b.count), sum = st.latency_sum_ns, n = count, span = 'all time';
    const old = ring[0];
    if (ring.length > 1 && count > old.count && old.counts.length === counts.length) {
      counts = counts.map((v, i) => v - old.counts[i]);
      sum -= old.sum;
      n = count - old.count;
      const secs = (t - old.t) / 1000;
      span = 'last ' + (secs < 9.5 ? secs.toFixed(1) : Math.round(secs)) + 's';
    }
    if (!n) return 'no calls';
    const q = (p) => {
      let acc = 0;
      for (let i = 0; i < counts.length; i++) {
        acc += counts[i];
        if (acc >= p * n) return '≤' + buckets[i].le;
      }
      return '?';
    };
    return 'p50 ' + q(0.5) + ' p99 ' + q(0.99) + ' mean ' + fmtDur(sum / n / 1e9) + ' (' + n + ' calls, ' + span + ')';
  }

  const stateColor = {
    Ready: '#1f9d55', Connecting: '#d98200', Draining: '#d98200', NotConnected: '#d0312d', NotRequired: '#8a94a3',
  };

  // renderGraph draws this node in the middle and its peers around it;
  // each edge and peer is colored by the peer's state.
  function renderGraph(st) {
    const W = 420, H = 260, cx = W / 2, cy = H / 2 - 6;
    const peers = st.peers || [];
    const svg = sv('svg', { class: 'graph', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'mesh peers' });
    const rx = 160, ry = 92;
    const pos = peers.map((p, i) => {
      // From the left, clockwise: labels under a node never meet the
      // center's.
      const a = Math.PI + (2 * Math.PI * i) / Math.max(peers.length, 1) + (peers.length > 2 ? Math.PI / peers.length : 0);
      return [cx + rx * Math.cos(a), cy + ry * Math.sin(a)];
    });
    peers.forEach((p, i) => {
      const [x, y] = pos[i];
      const color = stateColor[p.state] || '#8a94a3';
      const dashed = p.state !== 'Ready' && p.state !== 'Draining';
      svg.append(sv('line', { x1: cx, y1: cy, x2: x, y2: y, stroke: color, 'stroke-width': 2,
        'stroke-dasharray': dashed ? '5 4' : null }));
    });
    peers.forEach((p, i) => {
      const [x, y] = pos[i];
      const color = stateColor[p.state] || '#8a94a3';
      const tip = [p.rid, p.state, p.endpoint, p.outbound ? 'dialed by this node' : 'dialed in',
        p.last_error ? 'last error: ' + p.last_error : '', 'since ' + p.since].filter(Boolean).join('\n');
      svg.append(sv('g', { class: 'peer', data: { rid: p.rid, state: p.state } },
        sv('title', { text: tip }),
        sv('circle', { cx: x, cy: y, r: 11, fill: color, stroke: '#fff', 'stroke-width': 2 }),
        sv('text', { x, y: y + 24, 'text-anchor': 'middle', text: short(p.rid, 22) }),
        sv('text', { x, y: y + 36, 'text-anchor': 'middle', class: 'sub', text: p.state })));
    });
    svg.append(sv('g', { class: 'self', data: { rid: st.rid, state: st.state } },
      sv('title', { text: st.rid + ' (this node)\n' + st.endpoint }),
      sv('circle', { cx, cy, r: 15, fill: '#2f6fd6', stroke: '#fff', 'stroke-width': 2 }),
      sv('text', { x: cx, y: cy + 29, 'text-anchor': 'middle', 'font-weight': 600, text: short(st.rid, 22) }),
      sv('text', { x: cx, y: cy + 41, 'text-anchor': 'middle', class: 'sub', text: 'this node · ' + st.state })));
    if (!peers.length) {
      svg.append(sv('text', { x: cx, y: 22, 'text-anchor': 'middle', class: 'sub', text: 'no peers' }));
    }
    return svg;
  }

  function renderPeerIssues(st) {
    const bad = (st.peers || []).filter((p) => p.last_error);
    if (!bad.length) return null;
    return el('ul', { class: 'muted' }, bad.map((p) =>
      el('li', null, el('code', { text: p.rid }), ' ', badge(p.state), ' ', el('span', { class: 'skip', text: p.last_error }))));
  }

  function renderChannels(chs) {
    if (!chs || !chs.length) return [el('p', { class: 'muted', text: 'no channels' })];
    return chs.map((c) => {
      const box = el('div', { class: 'channel', data: { channel: c.name, role: c.role } });
      box.append(el('div', null, el('code', { text: c.name }), ' ', badge(c.role, ''),
        c.role === 'server' ? el('span', null, ' weight ', el('b', { class: 'own-weight', text: c.weight })) : null));
      if (!c.servers.length) {
        if (c.role === 'client') box.append(el('p', { class: 'muted', text: 'no selection recorded yet on this node' }));
        return box;
      }
      const eligible = c.servers.filter((s) => !s.skip).reduce((a, s) => a + s.weight, 0);
      const rows = c.servers.map((s) => {
        const expected = !s.skip && eligible ? s.weight / eligible : 0;
        const fill = el('span', { class: 'fill' });
        fill.style.width = (100 * s.share).toFixed(1) + '%';
        const mark = el('span', { class: 'mark', title: 'weight share ' + pct(expected) });
        mark.style.left = 'calc(' + (100 * expected).toFixed(1) + '% - 1px)';
        return el('tr', { class: 'server', data: { rid: s.rid, weight: s.weight } },
          el('td', { class: 'mono' }, short(s.rid, 28), s.local ? ' (local)' : ''),
          el('td', { class: 'num weight', text: s.weight }),
          el('td', { class: 'num', text: pct(expected) }),
          el('td', null, el('span', { class: 'bar' }, fill, mark), ' ', el('span', { class: 'share', text: pct(s.share) })),
          el('td', { class: 'num', text: s.picks }),
          el('td', { class: 'skip', text: s.skip || '' }));
      });
      box.append(el('table', null,
        el('thead', null, el('tr', null, el('th', { text: 'Server' }), el('th', { class: 'num', text: 'weight' }),
          el('th', { class: 'num', text: 'weight share' }), el('th', { text: 'recent selections' }),
          el('th', { class: 'num', text: 'picks' }), el('th', { text: 'skipped' }))),
        el('tbody', null, rows)));
      box.append(el('p', { class: 'muted', text: 'share of the last ' + c.samples +
        ' recorded selections of this node (one in 16 picks is recorded, and every failure); latest: ' +
        c.last_outcome + ' at ' + new Date(c.last_at).toLocaleTimeString() }));
      return box;
    });
  }

  // ago says how long before now (the snapshot's time) t was.
  function ago(t, now) {
    const s = Math.max(0, (Date.parse(now) - Date.parse(t)) / 1000);
    return s < 1 ? 'just now' : s < 90 ? Math.round(s) + 's ago' : Math.round(s / 60) + 'min ago';
  }

  // renderMembers lists the mesh as the node sees it: every member with its
  // state, Server channels and weights, and for Object Servers the
  // placement weight, hosted kinds and drain; a peer that went away stays
  // listed as lost or departed with why and when.
  function renderMembers(st, sp, at) {
    const spotMembers = new Map();
    for (const m of (sp && sp.stats && sp.stats.members) || []) spotMembers.set(m.rid, m);
    // Spot counts are known for this node only (its own activations).
    let ownSpots = null;
    if (sp && sp.stats && sp.stats.role === 'server') ownSpots = (sp.stats.kinds || []).reduce((a, k) => a + k.active, 0);
    const rows = (st.members || []).map((m) => {
      const om = spotMembers.get(m.rid);
      const chans = Object.entries(m.channels || {}).sort().map(([c, w]) => c + ' ' + w).join(', ');
      const gone = m.state === 'lost' || m.state === 'departed';
      return el('tr', { class: 'member', data: { rid: m.rid, state: m.state } },
        el('td', { class: 'mono', text: m.rid }),
        el('td', null, badge(m.state, gone || m.state === 'NotConnected' ? 'bad' : m.state === 'self' || m.state === 'Ready' ? 'ok' : '')),
        el('td', { class: 'mono', text: chans || '—' }),
        el('td', { class: 'num', text: om ? om.placement_weight : '—' }),
        el('td', { class: 'mono', text: om ? (om.kinds ? om.kinds.join(', ') : 'all') : '—' }),
        el('td', { class: 'num spots', text: m.self && ownSpots !== null ? ownSpots : '—' }),
        el('td', { text: om && om.draining ? 'draining' : '' }),
        el('td', { class: 'why' + (gone ? ' skip' : ''), text: m.reason ? short(m.reason, 80) + (m.since ? ' · ' + ago(m.since, at) : '') : '' }));
    });
    return el('table', { class: 'members' },
      el('thead', null, el('tr', null, el('th', { text: 'RID' }), el('th', { text: 'state' }), el('th', { text: 'Server channels' }),
        el('th', { class: 'num', text: 'placement' }), el('th', { text: 'kinds' }), el('th', { class: 'num', text: 'Spots' }),
        el('th', { text: '' }), el('th', { text: 'why' }))),
      el('tbody', null, rows));
  }

  function renderSpots(sp, at) {
    if (!sp || !sp.enabled) return el('p', { class: 'muted', text: 'no Spot runtime on this mesh (object role none)' });
    const s = sp.stats;
    const box = el('div', { class: 'spots' });
    box.append(el('div', { class: 'facts' },
      el('span', null, 'role ', el('b', { text: s.role })),
      s.role === 'server' ? el('span', null, 'lease ', s.lease_valid ? badge('valid', 'ok') : badge('invalid', 'bad')) : null,
      el('span', null, 'redirects ', el('b', { text: s.redirects })),
      el('span', { class: 'fenced' + (s.fenced ? ' skip' : '') }, 'fenced ', el('b', { text: s.fenced }),
        s.last_fenced ? ' (last ' + s.last_fenced.what + ': ' + s.last_fenced.reason + ', ' + ago(s.last_fenced.at, at) + ')' : ''),
      el('span', { class: s.overlaps ? 'skip' : '' }, 'overlaps ', el('b', { text: s.overlaps })),
      el('span', null, 'sends dropped ', el('b', { text: s.sends_dropped })),
      el('span', { class: s.async_abandoned ? 'skip' : '' }, 'async replies abandoned ', el('b', { text: s.async_abandoned })),
      el('span', null, 'cached ', el('b', { text: s.cached }))));
    if (s.kinds && s.kinds.length) {
      box.append(el('table', null,
        el('thead', null, el('tr', null, el('th', { text: 'kind' }), el('th', { class: 'num', text: 'active' }),
          el('th', { class: 'num', text: 'activations' }), el('th', { class: 'num', text: 'deactivations' }),
          el('th', { class: 'num', text: 'turns' }), el('th', { class: 'num', text: 'turn errors' }))),
        el('tbody', null, s.kinds.map((k) => {
          let turns = 0, failed = 0;
          for (const tc of k.turns || []) {
            turns += tc.count;
            if (tc.result !== 'ok') failed += tc.count;
          }
          return el('tr', { class: 'kind', data: { kind: k.kind } },
            el('td', { class: 'mono', text: k.kind }), el('td', { class: 'num active', text: k.active }),
            el('td', { class: 'num', text: k.activations }), el('td', { class: 'num', text: k.deactivations }),
            el('td', { class: 'num turns', text: turns }), el('td', { class: 'num' + (failed ? ' skip' : ''), text: failed }));
        }))));
    }
    return box;
  }

  // ---- supervision tree ----
  function collapsedByDefault(n) {
    return (n.children || []).length > 12;
  }
  function isCollapsed(n) {
    return ui.toggled.has(n.path) ? ui.toggled.get(n.path) : collapsedByDefault(n);
  }

  function renderTree(root) {
    const box = document.getElementById('tree');
    ui.allPaths = [];
    if (!root) {
      box.replaceChildren(el('p', { class: 'muted', text: 'process starting' }));
      return;
    }
    box.replaceChildren(el('ul', null, renderActor(root)));
  }

  function renderActor(n) {
    ui.allPaths.push(n.path);
    const kids = n.children || [];
    const failed = n.state === 'failed' || !!n.last_failure;
    const rowCls = 'row' + (n.restarts > 0 ? ' restarted' : '') + (failed ? ' failed' : '');
    const mb = n.mailbox || {};
    const name = n.path === '/' ? '/' : n.path.slice(n.path.lastIndexOf('/') + 1);
    const li = el('li', { data: { path: n.path, state: n.state, restarts: n.restarts } });
    if (kids.length && isCollapsed(n)) li.classList.add('collapsed');
    const tog = el('span', { class: 'tog', text: kids.length ? (isCollapsed(n) ? '▸' : '▾') : '' });
    if (kids.length) {
      tog.addEventListener('click', () => {
        const c = !li.classList.contains('collapsed');
        ui.toggled.set(n.path, c);
        li.classList.toggle('collapsed', c);
        tog.textContent = c ? '▸' : '▾';
      });
    }
    const running = n.info && n.info.running;
    li.append(el('div', { class: rowCls },
      tog,
      el('span', { class: 'name', title: n.path, text: name }),
      el('span', { class: 'kind', text: n.kind }),
      badge(n.state),
      n.restarts > 0 ? badge('restarts ' + n.restarts, 'restarted') : null,
      el('span', { class: 'muted', title: 'mailbox depth / limit, bytes / limit' },
        'mailbox ' + mb.depth + '/' + fmtMax(mb.max_messages, String) + ' · ' + fmtBytes(mb.bytes || 0) + '/' + fmtMax(mb.max_bytes, fmtBytes)),
      running !== undefined ? el('span', null, 'running ', el('b', { class: 'running', text: running })) : null,
      n.hung ? el('span', { class: 'skip', text: 'hung ' + n.hung }) : null,
      n.folded_children ? el('span', { class: 'folded', text: n.folded_children + ' Spots (folded)' }) : null,
      kids.length && isCollapsed(n) ? el('span', { class: 'muted', text: kids.length + ' children' }) : null,
      n.last_failure ? el('span', { class: 'failure', title: n.last_failure.stack || '',
        text: 'last failure: ' + n.last_failure.reason + ' (' + new Date(n.last_failure.at).toLocaleTimeString() + ')' }) : null));
    if (kids.length) li.append(el('ul', null, kids.map(renderActor)));
    return li;
  }

  function setAll(collapsed) {
    for (const p of ui.allPaths) ui.toggled.set(p, collapsed);
    for (const li of document.querySelectorAll('#tree li')) {
      if (!li.querySelector(':scope > ul')) continue;
      li.classList.toggle('collapsed', collapsed);
      li.querySelector(':scope > .row > .tog').textContent = collapsed ? '▸' : '▾';
    }
  }

  document.getElementById('tree-expand').addEventListener('click', () => setAll(false));
  document.getElementById('tree-collapse').addEventListener('click', () => setAll(true));
  connect();
})();
