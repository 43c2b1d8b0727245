/* trainsizer planner page: form -> JSON -> POST ui/plan -> server-rendered result (charts are SVG).
   Errors come back as {field, message}; the message is shown beside the input whose data-field
   names that field. No framework, no network access beyond this server. */
(function () {
  "use strict";
  var form = document.getElementById("plan-form");
  var result = document.getElementById("result");
  var statusEl = document.getElementById("status");
  var lang = document.documentElement.getAttribute("data-lang") || "en";
  var ui = JSON.parse(document.getElementById("ui-labels").textContent);
  var STATE_KEY = "trainsizer-planner-state";
  var picked = [];
  var WIDE = "(min-width: 900px)";  /* a screen this wide shows the folded details open */
  var lastBody = null;  /* the request of the plan on screen: the downloads export the same plan */

  function byId(id) { return document.getElementById(id); }
  function val(id) { var el = byId(id); return el ? el.value.trim() : ""; }
  /* a number as people type it: 2亿, 2e8, 200M, 2,000,000,000, full-width digits; null when it is none */
  var SCALE = { "千": 1e3, "万": 1e4, "亿": 1e8, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12 };
  function parseNumber(text) {
    var t = text.replace(/[\uff01-\uff5e]/g, function (c) { return String.fromCharCode(c.charCodeAt(0) - 0xfee0); })
      .replace(/[\s,_'\u3000\u00a0]/g, "").replace(/\u3002/g, ".").toLowerCase();
    var m = /^([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)([千万亿kmbgt]*)$/.exec(t);
    if (!m) { return null; }
    var n = Number(m[1]);
    m[2].split("").forEach(function (c) { n *= SCALE[c]; });
    return isFinite(n) ? n : null;
  }
  function num(id) {
    var v = val(id);
    if (v === "") { return undefined; }
    var n = parseNumber(v);
    if (n === null) {  /* refused here, in the page's language: never a number cut short */
      throw { field: byId(id).getAttribute("data-field"), message: ui.bad_number.replace("{value}", v) };
    }
    return n;
  }
  function put(obj, key, value) { if (value !== undefined && value !== "") { obj[key] = value; } }

  function collect() {
    var model = {};
    var config = val("model-config");
    if (config) {
      try { model.architecture = JSON.parse(config); } catch (e) {
        throw { field: "job.model.architecture", message: ui.invalid_json + ": " + e.message };
      }
    } else {
      model.preset = val("model-preset");
    }
    var training = {};
    var method = val("method");
    put(training, "method", method);
    put(training, "precision", val("precision"));
    put(training, "optimizer", val("optimizer"));
    put(training, "framework", val("framework"));
    put(training, "micro_batch_size", num("micro-batch"));
    put(training, "seq_len", num("seq-len"));
    put(training, "global_batch_size", num("global-batch"));
    put(training, "tokens", num("tokens"));
    put(training, "activation_checkpointing", val("checkpointing"));
    put(training, "quantization", val("quantization"));
    if (method === "lora" || method === "qlora") {
      var lora = {};
      put(lora, "rank", num("lora-rank"));
      put(lora, "targets", val("lora-targets"));
      training.lora = lora;
    }
    var constraints = {};
    var gpus = Array.prototype.map.call(byId("gpus").selectedOptions, function (o) { return o.value; });
    if (gpus.length) { constraints.gpus = gpus; }
    put(constraints, "max_gpus", num("max-gpus"));
    put(constraints, "gpus_per_node", num("gpus-per-node"));
    put(constraints, "budget", num("budget"));
    put(constraints, "currency", val("currency"));
    put(constraints, "deadline_days", num("deadline-days"));
    put(constraints, "site", val("site"));
    put(constraints, "horizon_years", num("horizon"));
    put(constraints, "objective", val("objective"));
    put(constraints, "runs_per_month", num("runs-per-month"));
    put(constraints, "utilisation", num("utilisation"));
    put(constraints, "time_value", num("time-value"));
    put(constraints, "setup_minutes", num("setup-minutes"));
    put(constraints, "voucher", val("voucher"));
    var job = { model: model, training: training };
    var data = {};
    put(data, "mean_tokens", num("mean-tokens"));
    put(data, "max_tokens", num("max-tokens"));
    if (Object.keys(data).length) { job.data = data; }
    return { job: job, constraints: constraints, scale: byId("want-scale").checked };
  }

  function clearErrors() {
    Array.prototype.forEach.call(document.querySelectorAll(".field-error"), function (el) { el.textContent = ""; });
    Array.prototype.forEach.call(document.querySelectorAll("[aria-invalid]"), function (el) {
      el.removeAttribute("aria-invalid");
    });
  }

  /* the error element for a field: an exact match, else the longest one whose field is a prefix */
  function errorElementFor(field) {
    var best = null, bestLen = -1;
    Array.prototype.forEach.call(document.querySelectorAll("[data-error-for]"), function (el) {
      var f = el.getAttribute("data-error-for");
      if (!f) { return; }
      var bare = field.replace(/\[\d+\]/g, "");
      if ((bare === f || bare.indexOf(f + ".") === 0 || bare.indexOf(f + "[") === 0) && f.length > bestLen) {
        best = el; bestLen = f.length;
      }
    });
    return best || byId("error-form");
  }

  /* the closest model presets to an unknown name, as buttons: one click plans with it */
  function offerChoices(el, choices) {
    if (!choices || !choices.length) { return; }
    var list = document.createElement("span");
    list.className = "choices";
    list.setAttribute("data-testid", "preset-choices");
    choices.forEach(function (c) {
      var b = document.createElement("button");
      b.type = "button";
      b.className = "choice";
      b.textContent = c;
      b.addEventListener("click", function () { byId("model-preset").value = c; submit(); });
      list.appendChild(b);
    });
    el.appendChild(list);
  }

  function showError(field, message, choices) {
    var el = errorElementFor(field || "");
    el.textContent = message + (el.id === "error-form" && field ? " (" + field + ")" : "");
    offerChoices(el, choices);
    var input = document.querySelector('[data-field="' + el.getAttribute("data-error-for") + '"]');
    if (input) { input.setAttribute("aria-invalid", "true"); }
    el.scrollIntoView({ block: "center" });
  }

  function setStatus(text, busy) {
    statusEl.textContent = text;
    form.setAttribute("aria-busy", busy ? "true" : "false");
    byId("submit").disabled = !!busy;
  }

  function renderCompare() {
    var grid = byId("compare-grid");
    if (!grid) { return; }
    grid.innerHTML = "";
    picked.forEach(function (i) {
      var card = document.querySelector('#option-cards .option-card[data-index="' + i + '"]');
      if (card) { grid.appendChild(card.cloneNode(true)); }
    });
    grid.setAttribute("data-count", String(grid.children.length));
  }

  function initCompare() {
    picked = [];
    var boxes = document.querySelectorAll(".compare-pick");
    Array.prototype.forEach.call(boxes, function (box) {
      if (box.checked) { picked.push(box.getAttribute("data-index")); }
      box.addEventListener("change", function () {
        var i = box.getAttribute("data-index");
        picked = picked.filter(function (p) { return p !== i; });
        if (box.checked) {
          picked.push(i);
          while (picked.length > 2) {
            var old = picked.shift();
            var oldBox = document.querySelector('.compare-pick[data-index="' + old + '"]');
            if (oldBox) { oldBox.checked = false; }
          }
        }
        renderCompare();
      });
    });
    renderCompare();
  }

  /* each section of the answer goes into its own live region (index.html), so that a screen reader
     announces the parts that changed, not the whole page at once */
  function place(html) {
    var tmp = document.createElement("div");
    tmp.innerHTML = html;
    var targets = {};
    Array.prototype.forEach.call(result.querySelectorAll("[data-slot-target]"), function (el) {
      el.innerHTML = "";
      targets[el.getAttribute("data-slot-target")] = el;
    });
    Array.prototype.slice.call(tmp.querySelectorAll("[data-slot]")).forEach(function (section) {
      (targets[section.getAttribute("data-slot")] || targets.details).appendChild(section);
    });
    /* the details (bill of materials, cost, charts, rankings, timeline, sources) come folded: on a phone the
       answer card, runner-ups and reasons stay on the first screen; a wide screen shows them open */
    if (window.matchMedia && window.matchMedia(WIDE).matches) {
      Array.prototype.forEach.call(result.querySelectorAll("details.fold"), function (d) { d.open = true; });
    }
  }

  /* the answer card in view once planned: on a phone the form above it is a few screens long */
  function showAnswer() {
    var card = byId("answer");
    if (card) { card.scrollIntoView({ block: "start" }); }
  }

  function fileName(disposition, format) {
    var m = /filename="?([^";]+)"?/.exec(disposition || "");
    return m ? m[1] : "trainsizer-plan." + format;
  }

  function exportPlan(format, button) {
    if (!lastBody) { return; }
    button.disabled = true;
    fetch("api/export?format=" + encodeURIComponent(format) + "&lang=" + encodeURIComponent(lang), {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ job: lastBody.job, constraints: lastBody.constraints })
    }).then(function (resp) {
      if (!resp.ok) { throw new Error("HTTP " + resp.status); }
      var name = fileName(resp.headers.get("Content-Disposition"), format);
      return resp.blob().then(function (blob) {
        var url = URL.createObjectURL(blob);
        var a = document.createElement("a");
        a.href = url;
        a.download = name;
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
      });
    }).catch(function (err) {
      showError("", ui.export_failed + ": " + err.message);
    }).then(function () { button.disabled = false; });
  }

  /* the server streams the result: its start up to the answer card (ending with the card's </section>) as soon
     as the plan is made, then the rest; onAnswer gets the start once, the promise the whole fragment */
  function readAll(resp, onAnswer) {
    if (!resp.body || !resp.body.getReader || !window.TextDecoder) { return resp.text(); }
    var reader = resp.body.getReader();
    var decoder = new TextDecoder();
    var text = "";
    var shown = false;
    function next() {
      return reader.read().then(function (chunk) {
        if (chunk.done) { return text + decoder.decode(); }
        text += decoder.decode(chunk.value, { stream: true });
        if (!shown && text.indexOf('data-slot="answer"') >= 0 && /<\/section>\s*$/.test(text)) {
          shown = true;
          onAnswer(text);
        }
        return next();
      });
    }
    return next();
  }

  function submit() {
    clearErrors();
    var body;
    try { body = collect(); } catch (err) { showError(err.field, err.message); return; }
    setStatus(ui.planning, true);
    fetch("ui/plan?lang=" + encodeURIComponent(lang), {
      method: "POST", headers: { "Content-Type": "application/json", "Accept": "text/html" },
      body: JSON.stringify(body)
    }).then(function (resp) {
      if (resp.ok) {
        return readAll(resp, function (answer) {
          place(answer);  /* the answer card, before the charts and details are made */
          result.setAttribute("data-state", "answer");
          showAnswer();
        }).then(function (html) {
          place(html);
          showAnswer();
          lastBody = body;
          result.setAttribute("data-state", "done");
          initCompare();
          setStatus("");
          saveState(true);
        });
      }
      return resp.text().then(function (text) {
        var data = {};
        try { data = JSON.parse(text); } catch (e) { data = { message: text }; }
        setStatus("");
        if (result.getAttribute("data-state") === "done") { result.setAttribute("data-state", "stale"); }
        if (resp.status === 503) { showError("", ui.busy); return; }
        showError(data.field || "", data.message || (ui.failed + " (HTTP " + resp.status + ")"), data.choices);
      });
    }).catch(function (err) {
      setStatus("");
      showError("", ui.failed + ": " + err);
    });
  }

  function saveState(submitted) {
    var values = {};
    Array.prototype.forEach.call(form.querySelectorAll("input, select, textarea"), function (el) {
      if (!el.id) { return; }
      if (el.type === "checkbox") { values[el.id] = el.checked; }
      else if (el.multiple) { values[el.id] = Array.prototype.map.call(el.selectedOptions, function (o) { return o.value; }); }
      else { values[el.id] = el.value; }
    });
    try { sessionStorage.setItem(STATE_KEY, JSON.stringify({ values: values, submitted: submitted })); } catch (e) { /* private mode */ }
  }

  function restoreState() {
    var raw = null;
    try { raw = sessionStorage.getItem(STATE_KEY); } catch (e) { return false; }
    if (!raw) { return false; }
    var state = JSON.parse(raw);
    Object.keys(state.values || {}).forEach(function (id) {
      var el = byId(id), v = state.values[id];
      if (!el) { return; }
      if (el.type === "checkbox") { el.checked = !!v; }
      else if (el.multiple) { Array.prototype.forEach.call(el.options, function (o) { o.selected = v.indexOf(o.value) >= 0; }); }
      else { el.value = v; }
    });
    return !!state.submitted;
  }

  /* the site follows the currency (the market it gives on this page) until the user picks a site */
  var siteSelect = byId("site"), currencySelect = byId("currency");
  var currencySites = JSON.parse(siteSelect.getAttribute("data-currency-sites") || "{}");
  var siteChosen = false;
  siteSelect.addEventListener("change", function () { siteChosen = true; });
  currencySelect.addEventListener("change", function () {
    var site = currencySites[currencySelect.value];
    if (!siteChosen && site) { siteSelect.value = site; }
  });

  form.addEventListener("submit", function (ev) { ev.preventDefault(); submit(); });
  result.addEventListener("click", function (ev) {
    var button = ev.target.closest ? ev.target.closest(".export-button") : null;
    if (button) { exportPlan(button.getAttribute("data-format"), button); }
  });
  Array.prototype.forEach.call(document.querySelectorAll("nav.lang a[data-lang]"), function (a) {
    a.addEventListener("click", function () { saveState(result.getAttribute("data-state") === "done"); });
  });
  if (restoreState()) { siteChosen = true; submit(); }
}());
