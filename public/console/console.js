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
