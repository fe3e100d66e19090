/**
 * The report's script, as text: it reads the embedded JSON and draws the task table and the run
 * list (a page at a time, so 10,000 runs cost no more than 50), the filters, and a run's detail.
 * Every value reaches the page through textContent, never as markup.
 *
 * Plain ES2020 in a string (no backticks, no template placeholders): it runs in the browser, not
 * in Node; test/inspect/report-browser.test.ts drives it in Chromium.
 */
export const CLIENT_JS = String.raw`
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('silo-data').textContent);
  var RUNS_PAGE = 50;
  var TASKS_PAGE = 25;
  var state = { failedOnly: false, code: '', task: '', text: '', page: 0, taskPage: 0, selected: null };

  function h(tag, props) {
    var node = document.createElement(tag);
    if (props) {
      for (var key in props) {
        var value = props[key];
        if (value === undefined || value === null) continue;
        if (key === 'text') node.textContent = String(value);
        else if (key === 'className') node.className = value;
        else if (key === 'onclick') node.addEventListener('click', value);
        else node.setAttribute(key, String(value));
      }
    }
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function add(node, child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(node, c); }); return; }
    node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function fmtMs(v) {
    if (v === null || v === undefined) return '';
    if (v < 1) return v.toFixed(2) + 'ms';
    if (v < 1000) return Math.round(v) + 'ms';
    return (v / 1000).toFixed(1) + 's';
  }
  function pct(v) { return v === null || v === undefined ? '' : (v * 100).toFixed(0) + '%'; }
  function num(v) { return v === null || v === undefined ? '' : v.toFixed(2); }
  // (the reporters' plural(), in the browser's language)
  function plural(n, word) { return n + ' ' + word + (n === 1 ? '' : 's'); }
  function badge(status) { return h('span', { className: 'badge ' + status, text: status }); }

  // --- tasks -------------------------------------------------------------------------------
  var taskStats = data.summary.tasks;
  var base = data.baseline;
  function change(c) {
    if (!c) return h('td', { className: 'num', text: 'not in baseline' });
    var d = c.delta === null ? '' : (c.delta < 0 ? '\u2212' : c.delta > 0 ? '+' : '\u00b1') + Math.round(Math.abs(c.delta) * 100) + ' pts ';
    return h('td', { className: 'num change', title: c.pHolm === null ? null : 'baseline ' + pct(c.was) + ', p (Holm) ' + c.pHolm.toPrecision(2) }, d, badge(c.verdict));
  }
  var ks = taskStats.length > 0 ? Object.keys(taskStats[0].passAtK) : [];
  function renderTasks() {
    var table = document.getElementById('task-table');
    var head = clear(table.tHead);
    var cols = ['task', 'runs', 'pass rate'];
    if (base) cols.push('vs baseline');
    ks.forEach(function (k) { cols.push('pass@' + k); });
    ks.forEach(function (k) { cols.push('pass^' + k); });
    cols.push('score', 'p50', 'p95', 'flaky', 'suspicious');
    head.appendChild(h('tr', null, cols.map(function (c, i) { return h('th', { className: i > 0 ? 'num' : '', text: c }); })));
    var body = clear(table.tBodies[0]);
    var from = state.taskPage * TASKS_PAGE;
    taskStats.slice(from, from + TASKS_PAGE).forEach(function (t) {
      var cells = [h('td', { text: t.taskId }), h('td', { className: 'num', text: (t.passed + t.failed) + (t.errors ? ' (+' + t.errors + ' err)' : '') }), h('td', { className: 'num', text: pct(t.passRate) })];
      if (base) cells.push(change(base.tasks[taskStats.indexOf(t)]));
      ks.forEach(function (k) { cells.push(h('td', { className: 'num', text: pct(t.passAtK[k]) })); });
      ks.forEach(function (k) { cells.push(h('td', { className: 'num', text: pct(t.passHatK[k]) })); });
      cells.push(h('td', { className: 'num', text: num(t.meanScore) }), h('td', { className: 'num', text: fmtMs(t.p50Ms) }), h('td', { className: 'num', text: fmtMs(t.p95Ms) }), h('td', { className: 'num', text: t.flaky ? 'flaky' : '' }), h('td', { className: 'num warn', text: t.suspicious ? String(t.suspicious) : '' }));
      var row = h('tr', { title: 'list the runs of ' + t.taskId }, cells);
      row.addEventListener('click', function () {
        var i = data.tasks.indexOf(t.taskId);
        if (i < 0) return;
        state.task = String(i); state.page = 0;
        document.getElementById('filter-task').value = state.task;
        renderRuns();
        document.getElementById('runs-section').scrollIntoView();
      });
      body.appendChild(row);
    });
    pager(document.getElementById('tasks-pager'), 'tasks', taskStats.length, TASKS_PAGE, state.taskPage, function (p) { state.taskPage = p; renderTasks(); });
  }

  function pager(node, name, total, size, page, go) {
    clear(node);
    var pages = Math.max(1, Math.ceil(total / size));
    if (pages === 1) return;
    var prev = h('button', { id: name + '-prev', type: 'button', text: '‹ previous' });
    var next = h('button', { id: name + '-next', type: 'button', text: 'next ›' });
    prev.disabled = page === 0; next.disabled = page >= pages - 1;
    prev.addEventListener('click', function () { go(page - 1); });
    next.addEventListener('click', function () { go(page + 1); });
    add(node, [prev, h('span', { id: name + '-page', text: 'page ' + (page + 1) + ' of ' + pages }), next]);
  }

  // --- runs --------------------------------------------------------------------------------
  function matches(row) {
    if (state.failedOnly && row.status === 'passed') return false;
    if (state.code !== '' && row.diagnosis.indexOf(Number(state.code)) < 0) return false;
    if (state.task !== '' && row.task !== Number(state.task)) return false;
    if (state.text !== '' && row.runId.toLowerCase().indexOf(state.text) < 0) return false;
    return true;
  }
  function fillFilters() {
    var codeCounts = data.codes.map(function () { return 0; });
    var taskCounts = data.tasks.map(function () { return 0; });
    data.runs.forEach(function (r) {
      r.diagnosis.forEach(function (c) { codeCounts[c]++; });
      taskCounts[r.task]++;
    });
    var codes = document.getElementById('filter-code');
    data.codes.forEach(function (code, i) { codes.appendChild(h('option', { value: String(i), text: code + ' (' + codeCounts[i] + ')' })); });
    var tasks = document.getElementById('filter-task');
    data.tasks.forEach(function (id, i) { tasks.appendChild(h('option', { value: String(i), text: id + ' (' + taskCounts[i] + ')' })); });
    document.getElementById('filter-failed').addEventListener('change', function (e) { state.failedOnly = e.target.checked; state.page = 0; renderRuns(); });
    codes.addEventListener('change', function (e) { state.code = e.target.value; state.page = 0; renderRuns(); });
    tasks.addEventListener('change', function (e) { state.task = e.target.value; state.page = 0; renderRuns(); });
    document.getElementById('filter-text').addEventListener('input', function (e) { state.text = e.target.value.trim().toLowerCase(); state.page = 0; renderRuns(); });
  }
  function renderRuns() {
    var rows = data.runs.filter(matches);
    var pages = Math.max(1, Math.ceil(rows.length / RUNS_PAGE));
    if (state.page >= pages) state.page = pages - 1;
    document.getElementById('run-count').textContent = rows.length + ' of ' + plural(data.runs.length, 'run');
    var body = clear(document.querySelector('#runs tbody'));
    var from = state.page * RUNS_PAGE;
    rows.slice(from, from + RUNS_PAGE).forEach(function (r) {
      var tr = h('tr', { tabindex: '0', 'data-run': r.runId, className: r.runId === state.selected ? 'selected' : '' },
        h('td', { className: 'mono', title: r.runId, text: r.runId.slice(-10) }),
        h('td', { text: data.tasks[r.task] }),
        h('td', { className: 'num', text: r.trial }),
        h('td', null, badge(r.status), r.retried ? h('span', { className: 'chip', text: 'retried' }) : null, r.suspicious ? h('span', { className: 'chip', title: 'passed, but the answer had nothing behind it (ungrounded_answer)', text: '⚠ suspicious' }) : null),
        h('td', { className: 'num', text: num(r.score) }),
        h('td', { className: 'num', text: fmtMs(r.durationMs) }),
        h('td', { text: r.termination }),
        h('td', null, r.diagnosis.map(function (c) { return h('span', { className: 'chip' + (data.codes[c] === 'self_corrected' ? ' good' : ''), text: data.codes[c] }); })));
      tr.addEventListener('click', function () { select(r.runId); });
      tr.addEventListener('keydown', function (e) { if (e.key === 'Enter') select(r.runId); });
      body.appendChild(tr);
    });
    if (rows.length === 0) body.appendChild(h('tr', null, h('td', { colspan: '8', className: 'muted', text: 'No run matches these filters.' })));
    pager(document.getElementById('runs-pager'), 'runs', rows.length, RUNS_PAGE, state.page, function (p) { state.page = p; renderRuns(); });
  }

  // --- one run -----------------------------------------------------------------------------
  var byId = new Map(data.runs.map(function (r) { return [r.runId, r]; }));
  function select(runId) {
    var row = byId.get(runId);
    if (!row) return;
    state.selected = runId;
    document.querySelectorAll('#runs tbody tr').forEach(function (tr) { tr.classList.toggle('selected', tr.getAttribute('data-run') === runId); });
    if (location.hash !== '#run=' + runId) history.replaceState(null, '', '#run=' + runId);
    renderDetail(row);
  }
  function facts(pairs) {
    return h('dl', { className: 'facts' }, pairs.filter(function (p) { return p[1] !== null && p[1] !== undefined && p[1] !== ''; }).map(function (p) { return [h('dt', { text: p[0] }), h('dd', null, p[1])]; }));
  }
  function changeList(changes, more) {
    if (!changes || changes.length === 0) return null;
    var list = h('ul', { className: 'changes' }, changes.map(function (c) {
      var cls = c.op === '+' ? 'op-add' : c.op === '-' ? 'op-del' : 'op-edit';
      var textOf = c.op === '+' ? c.after : c.op === '-' ? c.before : c.before + ' → ' + c.after;
      return h('li', null, h('span', { className: cls, text: c.op + ' ' }), c.path || '(root)', ': ', textOf);
    }));
    if (more) list.appendChild(h('li', { className: 'muted', text: '… ' + more + ' more' }));
    return list;
  }
  function timelineTable(d) {
    var rows = d.timeline.map(function (e) {
      var what;
      if (e.kind === 'call') {
        var result;
        if (e.ok === undefined) result = h('div', { className: 'warn', text: '… no result (the run ended first)' });
        else if (e.ok) result = h('div', null, h('span', { className: 'ok', text: '→ ok ' }), h('span', { className: 'muted', text: '(' + fmtMs(e.durationMs) + ')' }), h('pre', { text: e.value }));
        else result = h('div', null, h('span', { className: 'bad', text: '→ ' + e.error.code + ' ' }), h('span', { className: 'muted', text: '(' + fmtMs(e.durationMs) + ') ' }), h('pre', { text: e.error.message }));
        what = [h('div', null, h('strong', { text: '#' + e.callId + ' ' + e.name })), h('pre', { text: e.input }), result, changeList(e.changes, e.moreChanges)];
      } else if (e.kind === 'gap') {
        what = h('em', { className: 'muted', text: '… ' + e.text + ' …' });
      } else if (e.kind === 'said' || e.kind === 'heard') {
        what = h('div', null, h('strong', { text: e.kind === 'heard' ? 'user › ' : 'agent › ' }), h('pre', { className: 'message', text: e.text }));
      } else {
        var cls = e.kind === 'threw' || e.kind === 'limit' || e.kind === 'user_error' ? 'bad' : e.kind === 'log' ? 'muted' : '';
        what = h('span', { className: cls, text: (e.kind === 'threw' ? 'threw ' : '') + e.text });
      }
      return h('tr', { 'data-seq': e.kind === 'gap' ? null : e.seq, className: 'event-' + e.kind }, h('td', { className: 't', text: e.kind === 'gap' ? '' : fmtMs(e.t) }), h('td', null, what));
    });
    return h('table', { className: 'timeline', id: 'timeline' }, h('tbody', null, rows));
  }
  function jumpTo(seq) {
    var tr = document.querySelector('#timeline tr[data-seq="' + Number(seq) + '"]');
    if (!tr) return;
    tr.scrollIntoView({ block: 'center' });
    tr.classList.add('flash');
    setTimeout(function () { tr.classList.remove('flash'); }, 1500);
  }
  function renderDetail(row) {
    var box = clear(document.getElementById('run-detail'));
    var taskId = data.tasks[row.task];
    add(box, h('h3', null, taskId + ' ', badge(row.status), row.suspicious ? h('span', { className: 'chip', text: '⚠ suspicious' }) : null));
    if (row.suspicious) add(box, h('p', { className: 'warn', id: 'suspicious' }, 'Passed, but the answer had nothing behind it (ungrounded_answer: no successful tool call, or an action claimed while the world did not change; the diagnosis says which): a lucky guess or a lie. --strict fails such runs.'));
    if (row.detail === undefined) {
      add(box, [
        facts([['run', h('code', { text: row.runId })], ['trial', String(row.trial)], ['score', num(row.score)], ['termination', row.termination], ['duration', fmtMs(row.durationMs)], ['diagnosis', row.diagnosis.map(function (c) { return data.codes[c]; }).join(', ')]]),
        h('p', { className: 'muted', id: 'no-detail' }, 'This run\'s full detail is not in the report (it keeps ' + plural(data.details.length, 'run') + ' in full, failed ones first). See it with ', h('code', { text: 'silo show ' + row.runId }), '.'),
      ]);
      return;
    }
    var d = data.details[row.detail];
    var think = d.agentTimeMs || 0;
    var share = think + d.toolTimeMs > 0 ? Math.round((100 * think) / (think + d.toolTimeMs)) : 0;
    add(box, facts([
      ['run', h('code', { text: d.runId })],
      ['agent', h('code', { text: d.agent })],
      ['score', num(d.score)],
      ['termination', d.termination || 'running'],
      ['time', d.durationMs === null ? '' : d.time ? d.time : fmtMs(d.durationMs) + ' · thinking ' + fmtMs(think) + ' (' + share + '%) · tools ' + fmtMs(d.toolTimeMs) + ' (' + (100 - share) + '%)'],
      ['tool calls', d.toolCalls + (d.refusedCalls ? ' (+' + d.refusedCalls + ' refused)' : '')],
      ['model', d.usage ? d.usage.requests + ' requests · ' + d.usage.inputTokens + ' input tokens · ' + d.usage.outputTokens + ' output tokens (measured by the gateway)' : null],
      ['user', d.user || null],
      ['user model', d.userUsage ? d.userUsage.requests + ' requests · ' + d.userUsage.inputTokens + ' input tokens · ' + d.userUsage.outputTokens + ' output tokens (the simulated user, apart from the agent)' : null],
      ['reported', d.reportedUsage ? d.reportedUsage.requests + ' requests · ' + d.reportedUsage.inputTokens + ' input · ' + d.reportedUsage.outputTokens + ' output tokens (the agent\'s own account)' : null],
      ['seed', String(d.seed)],
      ['started', d.startedAt],
      ['error', d.error ? d.error.code + ': ' + d.error.message : null],
    ]));
    add(box, h('h3', { text: 'Diagnosis' }));
    if (d.diagnosis.length === 0) add(box, h('p', { className: 'muted', text: 'nothing to report' }));
    else add(box, h('ul', { id: 'diagnosis' }, d.diagnosis.map(function (f) {
      var link = f.seq === undefined ? null : h('a', { className: 'seq', title: 'show this event in the timeline', text: f.at || 'event ' + f.seq });
      if (link) link.addEventListener('click', function () { jumpTo(f.seq); });
      return h('li', null, h('span', { className: 'chip' + (f.code === 'self_corrected' ? ' good' : ''), text: f.code }), ' ', f.message, link ? ' (' : '', link, link ? ')' : '');
    })));
    add(box, h('h3', { text: 'Timeline' }));
    add(box, timelineTable(d));
    if (d.conversation && d.conversation.length > 0) {
      add(box, h('h3', { text: 'Conversation' }));
      if (d.omittedMessages) add(box, h('p', { className: 'muted', text: d.omittedMessages + ' earlier messages left out (see models.jsonl)' }));
      add(box, h('table', { className: 'conversation', id: 'conversation' }, h('tbody', null, d.conversation.map(function (m) {
        return h('tr', { className: 'msg-' + m.role }, h('td', { className: 'muted', text: m.role === 'assistant' ? 'model #' + m.requestId : m.role }), h('td', null, h('pre', { text: m.text })));
      }))));
    }
    add(box, h('h3', { text: 'Changes to the world' }));
    if (d.diff === null) add(box, h('p', { className: 'muted', text: 'no diff recorded' }));
    else if (d.diff.length === 0) add(box, h('p', { className: 'muted', text: 'none' }));
    else add(box, changeList(d.diff, d.moreDiff));
    add(box, h('h3', { text: 'Checks' }));
    if (d.checks.length === 0) add(box, h('p', { className: 'muted', text: 'none (the run was not graded)' }));
    else add(box, h('table', { id: 'checks' }, h('thead', null, h('tr', null, h('th', { text: '' }), h('th', { text: 'check' }), h('th', { text: 'expected' }), h('th', { text: 'actual' }))),
      h('tbody', null, d.checks.map(function (c) {
        return h('tr', null, h('td', { className: c.pass ? 'ok' : 'bad', text: c.pass ? '✓' : '✗' }), h('td', null, c.name, c.gate && c.pass ? h('div', { className: 'muted', text: 'a gate: not scored while it holds' }) : null, c.message !== undefined ? h('div', { className: 'muted', text: c.message }) : null),
          h('td', null, c.expected !== undefined ? h('pre', { text: c.expected }) : null), h('td', null, c.actual !== undefined ? h('pre', { text: c.actual }) : null));
      }))));
    if (d.output !== null) add(box, [h('h3', { text: 'Output' + (d.outputTruncated ? ' (truncated)' : '') }), h('pre', { id: 'output', text: d.output })]);
  }

  renderTasks();
  fillFilters();
  renderRuns();
  var m = /^#run=([0-9A-Za-z]+)$/.exec(location.hash);
  if (m) select(m[1]);
})();
`;
