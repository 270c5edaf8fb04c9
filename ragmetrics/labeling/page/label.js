// The labelling page. Every text from the server is set with textContent: a sample's text is data, not markup.
"use strict";

const state = { status: null, position: null, answered: false, history: [], token: null, team: false, item: null };
// A team queue's link carries the labeller's own token in its fragment (never sent in a URL or Referer):
// every call, reads included, then goes with it (labeling/team.py).
{
  const fromLink = new URLSearchParams(window.location.hash.slice(1)).get("token");
  if (fromLink) { state.token = fromLink; state.team = true; }
}
const $ = (id) => document.getElementById(id);

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (state.team) init.headers["X-Ragmetrics-Token"] = state.token;
  if (body !== undefined) {
    if (state.token === null) state.token = (await api("GET", "/api/status")).token;
    init.headers["Content-Type"] = "application/json";
    init.headers["X-Ragmetrics-Token"] = state.token;  // writes need the session's token (server.py)
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const payload = await response.json();
  if (!response.ok) {
    const error = new Error(payload.error || response.statusText);
    error.status = response.status;
    throw error;
  }
  if (payload && typeof payload.token === "string") state.token = payload.token;
  return payload;
}

function showError(error) {
  $("error").textContent = String(error.message || error);
  $("error").hidden = false;
}

function renderStatus(status) {
  state.status = status;
  $("metric").textContent = status.metric;
  $("run").textContent = status.run;
  $("ask").textContent = status.ask;
  $("progress").textContent =
    `${status.labelled} labelled of ${status.total} samples; this session aims at ${status.target}.`;
  $("plan").textContent = status.plan;
  if (status.labeller) $("run").textContent = `${status.run} (labelling as ${status.labeller})`;
  $("labels-file").textContent = status.labels_file;
  $("snippet").textContent = `human_labels:\n  path: ${status.labels_file}`;
}

function renderChoices(current) {
  const box = $("choices");
  box.replaceChildren();
  for (const choice of state.status.choices) {
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.key = choice.key;
    button.textContent = `${choice.text} (${choice.key})`;
    if (current !== null && Math.abs(current - choice.value) < 1e-9) button.classList.add("chosen");
    button.addEventListener("click", () => answer(choice));
    box.append(button);
  }
}

function fieldBox(name, value) {
  const box = document.createElement("div");
  box.className = "field";
  const title = document.createElement("h3");
  title.textContent = name;
  box.append(title);
  if (Array.isArray(value)) {
    const list = document.createElement("ol");
    list.className = "contexts";
    for (const text of value) {
      const item = document.createElement("li");
      const body = document.createElement("div");
      body.className = "text";
      body.textContent = text;
      item.append(body);
      list.append(item);
    }
    if (!value.length) list.textContent = "(nothing retrieved)";
    box.append(list);
  } else {
    const body = document.createElement("div");
    body.className = "text";
    body.textContent = value === null || value === undefined ? "(none)" : String(value);
    box.append(body);
  }
  return box;
}

async function show(position) {
  if (position === null || position === undefined) return finishView();
  const item = await api("GET", `/api/item/${position}`);
  state.position = position;
  state.answered = false;
  $("done").hidden = true;
  $("reveal").hidden = true;
  $("judge-score").textContent = "";  // the last sample's verdict must not linger in the page
  $("judge-reason").textContent = "";
  $("ask-box").hidden = false;
  $("sample").hidden = false;
  $("sample-id").textContent = item.sample_id;
  $("position").textContent = `${position + 1} in the labelling order`;
  const fields = $("fields");
  fields.replaceChildren();
  for (const [name, value] of Object.entries(item.texts)) fields.append(fieldBox(name, value));
  renderSpans(item);
  renderChoices(item.label);
  document.body.dataset.position = String(position);
}

// Selecting the answering text. A test set's qrels pass over a corpus with offsets: the person selects text
// in the one passage, sent in its characters and stored as a span of its document (labeling/spans.py). A
// team queue with passages (labeling/team.py): any shown context with a place in its document
// (item.passages[i]: doc_id, start, end) takes a selection, sent in the document's characters.
function passageBoxes() {
  return [...document.querySelectorAll("#fields ol.contexts li .text")];
}

// Offsets between the page and the server are in characters as Python counts them (code points): a JS
// string's length and a DOM range's offsets count UTF-16 code units, and an emoji or any character outside
// the Basic Multilingual Plane is two of them. A string's iterator walks code points, so the page converts
// both ways through it (codePoints, and slicing the array of a text's code points).
function codePoints(text) {
  return [...text].length;
}

function markSpans(box, spans) {
  const chars = [...box.textContent];  // one entry per code point: the server's offsets index this
  const piece = (from, to) => chars.slice(from, to).join("");
  box.replaceChildren();
  let at = 0;
  for (const span of [...spans].sort((a, b) => a.start - b.start)) {
    if (span.start > at) box.append(document.createTextNode(piece(at, span.start)));
    const mark = document.createElement("mark");
    mark.textContent = piece(span.start, span.end);
    mark.title = `selected as answering text, grade ${span.grade}`;
    box.append(mark);
    at = span.end;
  }
  if (at < chars.length) box.append(document.createTextNode(piece(at)));
}

// The spans to mark in each passage box: one list per box, null where the box takes no selection.
function spansPerBox(item) {
  if (Array.isArray(item.passages)) return item.passage_spans || [];
  return item.spans === null || item.spans === undefined ? [] : [item.spans];
}

function renderSpans(item) {
  state.item = item;
  const perBox = spansPerBox(item);
  const boxes = passageBoxes();
  const tools = $("span-tools");
  tools.hidden = !perBox.some((spans, i) => Array.isArray(spans) && boxes[i]);
  if (tools.hidden) return;
  let count = 0;
  perBox.forEach((spans, i) => {
    if (!Array.isArray(spans) || !boxes[i]) return;
    markSpans(boxes[i], spans);
    count += spans.length;
  });
  document.body.dataset.spans = String(count);
}

function selectionInPassage() {
  const selection = window.getSelection();
  if (!selection || selection.rangeCount === 0 || selection.isCollapsed) return null;
  const range = selection.getRangeAt(0);
  const perBox = spansPerBox(state.item);
  const index = passageBoxes().findIndex((box, i) => Array.isArray(perBox[i])
    && box.contains(range.startContainer) && box.contains(range.endContainer));
  if (index < 0) return null;
  const before = document.createRange();  // characters before the selection, across marks
  before.setStart(passageBoxes()[index], 0);
  before.setEnd(range.startContainer, range.startOffset);
  const start = codePoints(before.toString());  // code points, as the server counts (codePoints above)
  return { index, start, end: start + codePoints(range.toString()) };
}

async function markSelection(grade) {
  const selected = selectionInPassage();
  if (!selected) { showError(new Error("select the answering text inside one passage first")); return; }
  const item = state.item;
  let body;
  if (Array.isArray(item.passages)) {  // a team queue: the document's characters
    const place = item.passages[selected.index];
    body = { position: state.position, doc_id: place.doc_id, start: place.start + selected.start,
             end: place.start + selected.end, grade };
  } else {
    body = { position: state.position, start: selected.start, end: selected.end, grade };
  }
  try {
    const result = await api("POST", "/api/span", body);
    // The person may have moved on while the span was stored: its reply marks the item it was sent for,
    // never the one shown now (its spans drawn over another item's passages, and that item's state taken).
    const current = state.item;
    const stale = state.position !== body.position || !current || current.sample_id !== item.sample_id;
    document.body.dataset.spanReplies = String(Number(document.body.dataset.spanReplies || 0) + 1);
    if (stale) return;
    window.getSelection().removeAllRanges();
    if (Array.isArray(current.passages)) {
      renderSpans({ ...current, passage_spans: result.passage_spans });
    } else {
      renderSpans({ ...current, spans: result.spans });
    }
  } catch (error) { showError(error); }
}

async function answer(choice) {
  if (state.position === null) return;
  try {
    const result = await api("POST", "/api/label", { position: state.position, value: choice.value });
    renderStatus(result.status);
    renderChoices(choice.value);
    state.answered = true;
    $("yours").textContent = choice.text;
    $("judge-score").textContent = result.score.toFixed(2);
    $("judge-reason").textContent = result.reason || "";
    $("reveal").hidden = false;
    $("next").focus();
    document.body.dataset.labelled = String(result.status.labelled);
  } catch (error) {
    showError(error);
    if (error.status === 409) { state.answered = true; next(); }  // handed on to someone else: move on
  }
}

async function next() {
  try {
    if (!state.team && state.status.labelled >= state.status.target && !state.keepGoing) return finishView();
    state.history.push(state.position);
    const found = await api("GET", `/api/next?after=${state.position ?? -1}`);
    if (found.position === null && found.waiting) {  // items others hold may come back: ask again shortly
      $("sample").hidden = true;
      $("ask-box").hidden = true;
      $("reveal").hidden = true;
      $("plan").textContent = "Waiting: the items left are held by others; they come to you if their holds run out.";
      document.body.dataset.waiting = "true";
      setTimeout(next, 1000);
      return;
    }
    document.body.dataset.waiting = "false";
    const position = found.position ?? (await api("GET", "/api/next?after=-1")).position;
    await show(position);
  } catch (error) { showError(error); }
}

function finishView() {
  $("sample").hidden = true;
  $("ask-box").hidden = true;
  $("reveal").hidden = true;
  $("done").hidden = false;
  document.body.dataset.done = "true";
}

async function finish() {
  try {
    renderStatus(await api("POST", "/api/finish", {}));
    $("continue").hidden = true;
    $("finish").textContent = "Finished: you can close this tab";
    $("finish").disabled = true;
  } catch (error) { showError(error); }
}

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey || !state.status) return;
  const key = event.key.toLowerCase();
  if (key === "q") { event.preventDefault(); finish(); return; }
  if (!$("done").hidden) return;
  const choice = state.status.choices.find((c) => c.key === key);
  if (choice) { event.preventDefault(); answer(choice); return; }
  if (key === "enter" || key === "arrowright") {
    event.preventDefault();
    if (state.answered) next();
    return;
  }
  if (key === "s") { event.preventDefault(); state.answered = true; next(); return; }
  if ((key === "b" || key === "arrowleft") && state.history.length) {
    event.preventDefault();
    show(state.history.pop()).catch(showError);
  }
});

window.addEventListener("DOMContentLoaded", async () => {
  $("next").addEventListener("click", next);
  $("finish").addEventListener("click", finish);
  $("continue").addEventListener("click", () => { state.keepGoing = true; next(); });
  for (const button of document.querySelectorAll("#span-tools button")) {
    button.addEventListener("click", () => markSelection(Number(button.dataset.grade)));
  }
  try {
    renderStatus(await api("GET", "/api/status"));
    const start = await api("GET", "/api/next?after=-1");
    if (state.team && start.position === null && start.waiting) { state.position = null; next(); }
    else if ((!state.team && state.status.labelled >= state.status.target) || start.position === null) finishView();
    else await show(start.position);
    document.body.dataset.ready = "true";
  } catch (error) { showError(error); }
});
