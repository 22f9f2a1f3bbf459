// The Skyhook console's own script: CSRF header for htmx, errors shown in the page, confirmations, charts.
// No inline script anywhere (the Content-Security-Policy forbids it): everything hangs off data attributes.
(function () {
  'use strict';
  var csrf = document.querySelector('meta[name="csrf-token"]');

  // htmx requests carry the session's CSRF token as a header (forms carry it as a hidden field).
  document.addEventListener('htmx:configRequest', function (e) {
    if (csrf) e.detail.headers['X-CSRF-Token'] = csrf.getAttribute('content');
  });

  // An htmx request answered with an error: its message (an HTML fragment Skyhook rendered) goes in the
  // page's notice area, never a raw dump in the list.
  document.addEventListener('htmx:beforeSwap', function (e) {
    var xhr = e.detail.xhr;
    if (xhr.status >= 400 && xhr.status !== 401) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
      e.detail.target = document.getElementById('flash');
    }
  });
  document.addEventListener('htmx:sendError', function () {
    var flash = document.getElementById('flash');
    if (flash) flash.innerHTML = '<p class="notice error">Skyhook did not answer: the live list will catch up when it is back.</p>';
  });

  // Forms that delete or rotate something ask first.
  document.addEventListener('submit', function (e) {
    var form = e.target;
    var question = form.getAttribute && form.getAttribute('data-confirm');
    if (question && !window.confirm(question)) e.preventDefault();
  });

  // Company pickers ([data-company-picker], src/console/company-picker.ts): a combobox over the suggestions
  // htmx puts in its listbox. Arrow keys move through them, Enter or a click picks one (its id goes in the
  // hidden companyId), Escape closes them. A pasted id is taken as it is. The form then sends companyId
  // only; text that was not picked is sent as `company`, for the server to read.
  var UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  function pickerOf(el) {
    var root = el && el.closest && el.closest('[data-company-picker]');
    if (!root) return null;
    var input = root.querySelector('input[data-listbox]');
    return { root: root, input: input, id: root.querySelector('input[name="companyId"]'), list: document.getElementById(input.getAttribute('data-listbox')), status: root.querySelector('[role="status"]') };
  }
  function pickerOptions(p) { return Array.prototype.slice.call(p.list.querySelectorAll('[role="option"]:not([aria-disabled="true"])')); }
  function pickerActive(p) { return p.list.querySelector('[role="option"][aria-selected="true"]'); }
  function pickerOpen(p, open) {
    p.list.hidden = !open;
    p.input.setAttribute('aria-expanded', open ? 'true' : 'false');
    if (!open) pickerMove(p, null);
  }
  function pickerMove(p, option) {
    var active = pickerActive(p);
    if (active) active.setAttribute('aria-selected', 'false');
    if (option) {
      option.setAttribute('aria-selected', 'true');
      p.input.setAttribute('aria-activedescendant', option.id);
      option.scrollIntoView({ block: 'nearest' });
    } else p.input.removeAttribute('aria-activedescendant');
  }
  function pickerPick(p, option) {
    p.input.value = option.getAttribute('data-name');
    p.id.value = option.getAttribute('data-id');
    pickerOpen(p, false);
  }
  document.querySelectorAll('[data-company-picker]').forEach(function (root) {
    var p = pickerOf(root);
    p.input.setAttribute('role', 'combobox');
    p.input.setAttribute('aria-autocomplete', 'list');
    p.input.setAttribute('aria-expanded', 'false');
    p.input.setAttribute('aria-controls', p.list.id);
  });
  document.addEventListener('input', function (e) {
    var p = pickerOf(e.target);
    if (!p || e.target !== p.input) return;
    // Typed text names no company until one is picked (or it is an id).
    var text = p.input.value.trim();
    p.id.value = UUID.test(text) ? text : '';
    if (text === '') pickerOpen(p, false);
  });
  document.addEventListener('htmx:afterSwap', function (e) {
    var p = pickerOf(e.detail.target);
    if (!p || e.detail.target !== p.list) return;
    p.list.querySelectorAll('[role="option"]').forEach(function (option, i) { option.id = p.list.id + '-' + i; });
    var n = pickerOptions(p).length;
    p.status.textContent = n === 0 ? 'No company matches.' : n + (n === 1 ? ' company matches' : ' companies match') + ': use the arrow keys to pick.';
    // Shown while the operator is in the field: for the text typed, or when asked (an arrow key).
    var asked = e.detail.requestConfig && e.detail.requestConfig.triggeringEvent;
    pickerOpen(p, document.activeElement === p.input && (p.input.value.trim() !== '' || (asked && asked.type === 'picker:open')));
  });
  document.addEventListener('keydown', function (e) {
    var p = pickerOf(e.target);
    if (!p || e.target !== p.input || e.altKey && e.key !== 'ArrowDown' || e.ctrlKey || e.metaKey) return;
    var options = pickerOptions(p);
    var at = options.indexOf(pickerActive(p));
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      // Closed: open it (its suggestions asked for first, if there are none yet).
      if (p.list.hidden) {
        if (p.list.children.length === 0) window.htmx.trigger(p.input, 'picker:open');
        else pickerOpen(p, true);
        return;
      }
      if (options.length === 0) return;
      // Down from the last (or Up from the first, or from none) goes round.
      var next = e.key === 'ArrowDown' ? at + 1 : at <= 0 ? options.length - 1 : at - 1;
      pickerMove(p, options[next % options.length]);
    } else if (e.key === 'Enter' && !p.list.hidden && at >= 0) {
      e.preventDefault();
      pickerPick(p, options[at]);
    } else if (e.key === 'Escape' && !p.list.hidden) {
      e.preventDefault();
      pickerOpen(p, false);
    }
  });
  // mousedown keeps the focus in the field; click picks.
  document.addEventListener('mousedown', function (e) {
    if (e.target.closest && e.target.closest('.picker-options')) e.preventDefault();
  });
  document.addEventListener('click', function (e) {
    var option = e.target.closest && e.target.closest('.picker-options [role="option"]:not([aria-disabled="true"])');
    var p = pickerOf(option);
    if (p) pickerPick(p, option);
  });
  document.addEventListener('focusout', function (e) {
    var p = pickerOf(e.target);
    if (p && e.target === p.input) pickerOpen(p, false);
  });
  // A picked company is sent as its id alone: the URL says companyId=…, as every link does.
  document.addEventListener('formdata', function (e) {
    var p = pickerOf(e.target.querySelector('[data-company-picker]'));
    if (p && p.id.value) e.formData.delete('company');
  });

  // Charts: each [data-chart] holds {x: [unix seconds], series: [[label, values], ...]}.
  var COLOURS = ['#0b5cad', '#1a7f37', '#c0262d', '#9a6700'];
  function drawCharts() {
    if (typeof uPlot === 'undefined') return;
    var charts = document.querySelectorAll('[data-chart]');
    charts.forEach(function (el) {
      var data = JSON.parse(el.getAttribute('data-chart'));
      var width = Math.max(260, el.clientWidth);
      var height = Number(el.getAttribute('data-height')) || 200;
      var opts = {
        width: width,
        height: height,
        legend: { show: true },
        // The page says UTC: so do the axes, whatever the browser's time zone.
        tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'); },
        scales: { x: { time: true } },
        axes: [{}, { size: 50 }],
        series: [{}].concat(data.series.map(function (s, i) {
          return { label: s[0], stroke: COLOURS[i % COLOURS.length], width: 2, spanGaps: false, points: { show: data.points === true, size: 6 } };
        })),
      };
      var values = [data.x].concat(data.series.map(function (s) { return s[1]; }));
      el.textContent = '';
      var plot = new uPlot(opts, values, el);
      el._plot = plot;
    });
  }
  var resizeTimer;
  window.addEventListener('resize', function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      document.querySelectorAll('[data-chart]').forEach(function (el) {
        if (el._plot) el._plot.setSize({ width: Math.max(260, el.clientWidth), height: Number(el.getAttribute('data-height')) || 200 });
      });
    }, 150);
  });
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', drawCharts);
  else drawCharts();
})();
