// matrixd calculator widget. Renders into every element carrying
// data-matrixd-calculator and talks only to the matrixd API it came from
// (or data-api). Options, as attributes: data-run, data-model + data-gpu,
// data-context, data-concurrency, data-theme (light or dark), data-api,
// data-heading (the level of its title: 2, or 1 on a page of its own).
(function () {
  "use strict";
  var script = document.currentScript;
  var scriptOrigin = script && script.src ? new URL(script.src, document.baseURI).origin : window.location.origin;
  var SVG = "http://www.w3.org/2000/svg";
  var MAX_AXIS = 16;
  // The catalogs' widget messages by language, written in by the server.
  var MESSAGES = {};
  // VERBATIM are the parameters that are names however they are written
  // (a GPU called 3090), never reformatted as numbers.
  var VERBATIM = { run_id: 1, request_id: 1, gpu: 1, from_gpu: 1, to_gpu: 1, model: 1, to_model: 1, from_model: 1, source_model: 1, facts_model: 1, value: 1, path: 1, name: 1, engine: 1 };

  // catalog is the messages of the language closest to lang: the same
  // tag, then its language (zh-TW and every other Chinese read zh-Hant),
  // else English.
  function catalog(lang) {
    var want = String(lang || "").toLowerCase(), base = want.split("-")[0];
    var codes = Object.keys(MESSAGES);
    for (var i = 0; i < codes.length; i++) if (codes[i].toLowerCase() === want) return codes[i];
    for (i = 0; i < codes.length; i++) if (codes[i].toLowerCase().split("-")[0] === base) return codes[i];
    return "en";
  }

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    (children || []).forEach(function (c) { e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return e;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }
  // Numbers for people, as the pages write them: three significant digits
  // below a hundred, whole numbers from there, grouped as lang groups them.
  var formats = {};
  function decimals(v) {
    var a = Math.abs(v);
    return a === 0 || a >= 100 ? 0 : Math.min(2 - Math.floor(Math.log10(a)), 8);
  }
  function people(lang, v) {
    if (v == null || !isFinite(v)) return "—";
    var d = decimals(v);
    var r = Math.round(v * Math.pow(10, d)) / Math.pow(10, d);
    d = Math.min(d, decimals(r)); // 99.96 is 100, not 100.0
    var key = lang + "/" + d;
    if (!formats[key]) formats[key] = new Intl.NumberFormat(lang, { maximumFractionDigits: d });
    return formats[key].format(r);
  }
  // label writes a context as the pages do: 48K for 49152, else the
  // number for people (1,000,000).
  function label(lang, tokens) { return tokens > 0 && tokens % 1024 === 0 ? tokens / 1024 + "K" : people(lang, tokens); }
  function spread(xs, n) {
    if (xs.length <= n) return xs.slice();
    var out = [];
    for (var i = 0; i < n; i++) out.push(xs[Math.floor(i * xs.length / n)]);
    return out;
  }
  function axis(measured, chosen) {
    var xs = measured.filter(function (x) { return x !== chosen; });
    xs = spread(xs, MAX_AXIS - 1);
    xs.push(chosen);
    return xs.sort(function (a, b) { return a - b; });
  }
  function colour(f) {
    f = Math.max(0, Math.min(1, f));
    var a = [255, 247, 204], b = [8, 48, 107], c = [];
    for (var i = 0; i < 3; i++) c.push(Math.round(a[i] + (b[i] - a[i]) * f));
    return { fill: "rgb(" + c.join(",") + ")", ink: f > 0.5 ? "#fff" : "#111" };
  }

  function ensureStyles(api) {
    if (document.querySelector("link[data-matrixd-css]")) return;
    document.head.appendChild(el("link", { rel: "stylesheet", href: api + "/widget/calculator.css", "data-matrixd-css": "" }));
  }

  function getJSON(url) {
    return fetch(url, { headers: { Accept: "application/json" } }).then(function (r) {
      return r.json().then(function (body) { return { ok: r.ok, status: r.status, body: body }; });
    });
  }

  function mount(root) {
    var api = (root.getAttribute("data-api") || scriptOrigin).replace(/\/$/, "");
    var lang = catalog(root.getAttribute("data-lang") || document.documentElement.lang || "en");
    var msgs = MESSAGES[lang] || {};
    function t(key) {
      var m = msgs[key] != null ? msgs[key] : key, args = arguments;
      return m.replace(/\{(\d+)\}/g, function (_, i) { return args[+i + 1]; });
    }
    function fmt(v) { return people(lang, v); }
    // say is a message of the API (a notice, a refusal: its code and
    // params) in the widget's language, numbers written as the widget
    // writes them; its English only when the catalog has no such code.
    function say(n, english) {
      var m = n && n.code ? msgs["msg." + n.code] : null;
      if (m == null) return english || "";
      var params = n.params || {}, parts = n.parts || {};
      return m.replace(/\{([a-z0-9_]+)\}/g, function (whole, name) {
        if (parts[name]) return say(parts[name], params[name]);
        var v = params[name];
        if (v == null) return whole;
        return !VERBATIM[name] && /^-?\d+(\.\d+)?$/.test(v) && v.length <= 16 ? fmt(+v) : v;
      });
    }
    function enumText(kind, v) { var k = kind + "." + v; return msgs[k] != null ? msgs[k] : String(v).replace(/_/g, " "); }
    function est(e, unit, measured) {
      if (!e) return "—";
      // A measured value is labelled so, not written as an interval.
      if (measured || fmt(e.low) === fmt(e.high)) return fmt(e.value) + " " + unit + " (" + enumText("method", "measured") + ")";
      return fmt(e.value) + " " + unit + " (" + fmt(e.low) + "–" + fmt(e.high) + ")";
    }
    ensureStyles(api);
    var theme = root.getAttribute("data-theme") === "dark" ? "dark" : "light";
    var uid = "mxd" + Math.random().toString(36).slice(2, 8);
    var box = el("section", { "class": "mxd mxd-" + theme, "aria-label": t("label"), lang: lang });
    var runSel = el("select", { id: uid + "-run", "data-in": "run" });
    var ctxIn = el("input", { id: uid + "-ctx", type: "number", min: "0", max: "16777216", step: "1", value: root.getAttribute("data-context") || "16384", "data-in": "context" });
    var concIn = el("input", { id: uid + "-conc", type: "number", min: "1", max: "65536", step: "1", value: root.getAttribute("data-concurrency") || "8", "data-in": "concurrency" });
    var vramIn = el("input", { id: uid + "-vram", type: "number", min: "1", max: "4096", step: "any", placeholder: t("vram.placeholder"), "data-in": "vram" });
    var gpuSel = el("select", { id: uid + "-gpu", "data-in": "target-gpu" }, [el("option", { value: "" }, [t("gpu.measured")])]);
    var outIn = el("input", { id: uid + "-out", type: "number", min: "1", max: "16777216", step: "1", placeholder: t("max_output.placeholder"), value: root.getAttribute("data-max-output") || "", "data-in": "max-output" });
    var rough = el("input", { id: uid + "-rough", type: "checkbox", "data-in": "rough" });
    var form = el("form", { "aria-label": t("query") }, [
      el("label", { "for": uid + "-run" }, [t("run"), runSel]),
      el("label", { "for": uid + "-ctx" }, [t("context"), ctxIn]),
      el("label", { "for": uid + "-conc" }, [t("concurrency"), concIn]),
      el("label", { "for": uid + "-vram" }, [t("vram"), vramIn]),
      el("label", { "for": uid + "-out" }, [t("max_output"), outIn]),
      el("label", { "for": uid + "-gpu" }, [t("target_gpu"), gpuSel]),
      el("label", { "for": uid + "-rough" }, [t("rough"), rough])
    ]);
    var out = {}, terms = {};
    function row(name, key) { out[key] = el("dd", { "data-out": key }, ["—"]); terms[key] = el("dt", {}, [name]); return [terms[key], out[key]]; }
    var dl = el("dl", { "aria-live": "polite" }, [].concat(
      row(t("out.status"), "status"), row(t("out.total"), "total"), row(t("out.per_request"), "per-request"),
      row("TTFT", "ttft"), row(t("out.basis"), "basis"), row(t("out.band"), "band"), row(t("out.capacity"), "capacity")));
    out.capacity.hidden = terms.capacity.hidden = true;
    var refusal = el("p", { "class": "mxd-refusal", role: "alert", "data-out": "refusal", hidden: "" });
    var limit = el("p", { "class": "mxd-refusal", role: "status", "data-out": "limit", hidden: "" });
    var notes = el("ul", { "class": "mxd-notes", "data-out": "warnings", hidden: "" });
    var heat = el("div", { "data-out": "heatmap", tabindex: "0" });
    box.appendChild(el(root.getAttribute("data-heading") === "1" ? "h1" : "h2", {}, [t("title")]));
    box.appendChild(form);
    box.appendChild(refusal);
    box.appendChild(limit);
    box.appendChild(dl);
    box.appendChild(notes);
    box.appendChild(heat);
    box.appendChild(el("p", { "class": "mxd-foot" }, [t("foot.before"), el("a", { href: api + "/docs", target: "_blank", rel: "noopener" }, ["matrixd"]), t("foot.after")]));
    root.textContent = "";
    root.appendChild(box);

    var axes = {};
    var seq = 0;
    function selection() {
      var q = new URLSearchParams();
      var v = runSel.value;
      if (v.indexOf("model:") === 0) {
        q.set("model", root.getAttribute("data-model"));
        q.set("gpu", root.getAttribute("data-gpu"));
      } else {
        q.set("run_id", v);
      }
      if (vramIn.value) q.set("vram_gb", vramIn.value);
      if (outIn.value) q.set("max_output_tokens", outIn.value);
      if (gpuSel.value) q.set("target_gpu", gpuSel.value);
      if (gpuSel.value && rough.checked) q.set("rough", "true");
      return q;
    }
    // inControls writes the API's parameter names in a refusal's text as
    // the widget's controls that set them, so that its fix can be done here.
    var controls = [
      ["rough=true", t("control.on", t("rough"))],
      ["max_output_tokens", t("control", t("max_output"))],
      ["target_gpu", t("control", t("target_gpu"))],
      ["vram_gb", t("control", t("vram"))],
      ["context_tokens", t("control", t("context"))]
    ];
    function inControls(text) {
      controls.forEach(function (c) { text = text.split(c[0]).join(c[1]); });
      return text;
    }
    function showRefusal(body) {
      refusal.hidden = false;
      var why = body && body.code ? say(body, body.detail) : body && body.detail;
      refusal.textContent = inControls((why || t("no_answer")) + (body && body.supported ? " " + t("supported", say(body.supported_notice, body.supported)) : ""));
    }
    // showBand shows the error band of an answer with a speed; one without
    // (over capacity, beyond max_model_len) has no band to show.
    function showBand(p) {
      var band = p.basis.error_band_pct ? t("band.total", fmt(p.basis.error_band_pct.total_tok_s)) :
        p.total_tok_s && p.basis.speed_method === "measured" ? enumText("method", "measured") : "";
      out.band.textContent = band || "—";
      out.band.hidden = terms.band.hidden = !band;
    }
    function update() {
      var my = ++seq;
      var q = selection();
      var l = parseInt(ctxIn.value, 10), b = parseInt(concIn.value, 10);
      if (!(l >= 0) || !(b >= 1)) return;
      q.set("context_tokens", String(l));
      q.set("concurrency", String(b));
      getJSON(api + "/v1/calculator/decode?" + q.toString()).then(function (r) {
        if (my !== seq) return;
        limit.hidden = true;
        notes.textContent = "";
        notes.hidden = true;
        if (!r.ok) {
          showRefusal(r.body);
          Object.keys(out).forEach(function (k) { out[k].textContent = "—"; });
          out.capacity.hidden = terms.capacity.hidden = true;
          box.setAttribute("data-state", "refused");
          return;
        }
        refusal.hidden = true;
        var p = r.body;
        (p.notices || []).forEach(function (n, i) { notes.appendChild(el("li", {}, [say(n, (p.warnings || [])[i])])); });
        notes.hidden = !notes.firstChild;
        out.status.textContent = enumText("status", p.status);
        var measured = p.basis.method === "measured";
        out.total.textContent = est(p.total_tok_s, "tok/s", measured);
        out["per-request"].textContent = est(p.per_request_tok_s, "tok/s", measured);
        out.ttft.textContent = est(p.ttft_ms, "ms", measured);
        out.basis.textContent = enumText("method", p.basis.method) + (p.basis.speed_method !== p.basis.method && p.basis.speed_method !== "none" ? " " + t("speed_method", enumText("method", p.basis.speed_method)) : "");
        showBand(p);
        // A run that states no output reservation answers its speed with
        // its KV capacity unknown: a dash, and why.
        var capUnknown = p.capacity && p.capacity.kv_tokens_low == null;
        out.capacity.textContent = capUnknown ? "— " + t("capacity.unknown") : "—";
        out.capacity.hidden = terms.capacity.hidden = !capUnknown;
        // An answer without a speed says which limit it is past, in words.
        if (!p.total_tok_s && msgs["limit." + p.status] != null) {
          limit.textContent = t("limit." + p.status, String(b), fmt(p.capacity ? p.capacity.max_concurrency_at_context : 0));
          limit.hidden = false;
        }
        box.setAttribute("data-state", "answered");
        box.setAttribute("data-query", l + "x" + b);
        // A model on a GPU is the run (or the runs, pooled) the answer
        // names: the grid is drawn on their measured axes.
        var id = runSel.value;
        if (!axes[id] && p.basis.run_ids && p.basis.run_ids.length) {
          fetchAxes(p.basis.run_ids).then(function (ax) {
            if (ax) axes[id] = ax;
            drawGrid(my, q, l, b);
          });
        }
      });
      drawGrid(my, q, l, b);
    }
    function drawGrid(my, base, l, b) {
      var id = runSel.value;
      var ax = axes[id];
      if (!ax) return;
      var q = new URLSearchParams(base.toString());
      q.delete("context_tokens");
      q.delete("concurrency");
      var ls = axis(ax.contexts, l), bs = axis(ax.concurrencies, b);
      q.set("contexts", ls.join(","));
      q.set("concurrencies", bs.join(","));
      getJSON(api + "/v1/calculator/grid?" + q.toString()).then(function (r) {
        if (my !== seq) return;
        heat.textContent = "";
        if (!r.ok) return;
        var peak = 0;
        r.body.rows.forEach(function (row) { row.cells.forEach(function (c) { if (c.total_tok_s) peak = Math.max(peak, c.total_tok_s.value); }); });
        // The label column fits the longest context written (1,000,000).
        var longest = Math.max.apply(null, r.body.rows.map(function (row) { return label(lang, row.context_tokens).length; }));
        var cw = 56, chh = 24, left = Math.max(52, 7 * longest + 12), top = 20;
        var s = svg("svg", { role: "img", width: left + cw * bs.length, height: top + chh * ls.length + 4, "aria-label": t("grid.label") });
        bs.forEach(function (x, i) { s.appendChild(svg("text", { x: left + cw * i + cw / 2, y: 14, "text-anchor": "middle", "class": "mxd-axis" }, String(x))); });
        r.body.rows.forEach(function (row, j) {
          s.appendChild(svg("text", { x: left - 6, y: top + chh * j + 16, "text-anchor": "end", "class": "mxd-axis" }, label(lang, row.context_tokens)));
          row.cells.forEach(function (c, i) {
            var g = svg("g", {});
            var v = c.total_tok_s ? c.total_tok_s.value : null;
            var col = v != null ? colour(v / (peak || 1)) : { fill: "#e6e6e6", ink: "#444" };
            var chosen = row.context_tokens === l && c.concurrency === b;
            g.appendChild(svg("title", {}, label(lang, row.context_tokens) + " × " + c.concurrency + ": " + (v != null ? fmt(v) + " tok/s (" + enumText("method", c.method) + ")" : (c.refusal ? say(c.refusal_notice, c.refusal) : enumText("status", c.status)))));
            g.appendChild(svg("rect", { x: left + cw * i, y: top + chh * j, width: cw - 2, height: chh - 2, rx: 2, fill: col.fill, stroke: chosen ? "#f0a500" : "none", "stroke-width": chosen ? 3 : 0, "data-chosen": chosen ? "true" : "false" }));
            g.appendChild(svg("text", { x: left + cw * i + cw / 2 - 1, y: top + chh * j + 15, "text-anchor": "middle", fill: col.ink }, v != null ? (c.method === "measured" ? "" : "~") + fmt(v) + (c.status === "requests_queued" ? "q" : "") : (c.status === "refused" ? "?" : "–")));
            // Choosing a cell asks it: its answer, with its basis, above.
            g.setAttribute("class", "mxd-cell");
            g.addEventListener("click", function () { ctxIn.value = String(row.context_tokens); concIn.value = String(c.concurrency); update(); });
            s.appendChild(g);
          });
        });
        heat.appendChild(s);
        heat.appendChild(el("p", { "class": "mxd-foot" }, [t(window.matchMedia && window.matchMedia("(hover: none)").matches ? "grid.legend.touch" : "grid.legend")]));
        heat.setAttribute("data-drawn", l + "x" + b);
      });
    }
    // fetchAxes is the contexts and concurrencies the runs measured, all
    // of them together; null when none answers.
    function fetchAxes(ids) {
      return Promise.all(ids.map(function (id) { return getJSON(api + "/v1/runs/" + encodeURIComponent(id) + "/decode"); })).then(function (rs) {
        var ls = {}, bs = {}, any = false;
        rs.forEach(function (r) {
          if (!r.ok) return;
          any = true;
          (r.body.items || []).forEach(function (c) { ls[c.context_tokens] = 1; bs[c.concurrency] = 1; });
        });
        var num = function (o) { return Object.keys(o).map(Number).sort(function (a, b) { return a - b; }); };
        return any ? { contexts: num(ls), concurrencies: num(bs) } : null;
      });
    }
    function loadAxes() {
      var id = runSel.value;
      if (axes[id] || id.indexOf("model:") === 0) { update(); return; }
      fetchAxes([id]).then(function (ax) {
        if (ax) axes[id] = ax;
        update();
      });
    }
    form.addEventListener("change", function (e) { if (e.target === runSel) loadAxes(); else update(); });
    form.addEventListener("submit", function (e) { e.preventDefault(); update(); });

    var want = root.getAttribute("data-run");
    Promise.all([getJSON(api + "/v1/runs?limit=100"), getJSON(api + "/v1/hardware")]).then(function (rs) {
      var runs = rs[0].ok ? rs[0].body.items : [];
      if (root.getAttribute("data-model") && root.getAttribute("data-gpu")) {
        runSel.appendChild(el("option", { value: "model:" }, [t("model_on_gpu", root.getAttribute("data-model"), root.getAttribute("data-gpu"))]));
      }
      runs.forEach(function (r) { runSel.appendChild(el("option", { value: r.id }, [r.title])); });
      if (want && !runs.some(function (r) { return r.id === want; })) runSel.insertBefore(el("option", { value: want }, [want]), runSel.firstChild);
      if (want) runSel.value = want;
      (rs[1].ok ? rs[1].body.items : []).forEach(function (g) { gpuSel.appendChild(el("option", { value: g.name }, [g.name + " (" + fmt(g.memory_bandwidth_gbs) + " GB/s)"])); });
      box.setAttribute("data-ready", "true");
      loadAxes();
    });
  }

  function start() {
    Array.prototype.forEach.call(document.querySelectorAll("[data-matrixd-calculator]"), function (root) {
      if (!root.getAttribute("data-mounted")) { root.setAttribute("data-mounted", "true"); mount(root); }
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
