// The confirmation dialog every action goes through, the error banner and the toast.

import { h, clear, $ } from './dom.js';

// Shows an error at the top of the page until dismissed or replaced.
export function showError(error) {
  $('banner-text').textContent = error && error.message ? error.message : String(error);
  $('banner').hidden = false;
}

export function hideError() {
  $('banner').hidden = true;
}

let toastTimer = 0;
export function toast(text) {
  const el = $('toast');
  el.textContent = text;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, 4000);
}

// Asks before an action. `fields`: [{id, label, type ('text', 'number', 'select'), value, min,
// options: [[value, label]], hint}]. On Confirm, `run(values)` is awaited: it resolves to the
// message of the toast, or rejects, and then the dialog stays open with the error (an
// ApiError says the method, path, HTTP status and the broker's reason). Resolves to whether
// the action ran.
export function confirmAction({ title, text, fields = [], confirmLabel = 'Confirm', danger = false, run }) {
  const dialog = $('confirm');
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text || '';
  $('confirm-error').textContent = '';
  const box = clear($('confirm-fields'));
  const inputs = {};
  for (const f of fields) {
    let input;
    if (f.type === 'select') {
      input = h('select', { id: 'field-' + f.id },
        f.options.map(([value, label]) => h('option', { value, selected: value === f.value }, label)));
    } else {
      input = h('input', {
        id: 'field-' + f.id, type: f.type || 'text', value: f.value ?? '', min: f.min,
        autocomplete: 'off', spellcheck: 'false',
      });
    }
    inputs[f.id] = input;
    box.append(h('label', { for: 'field-' + f.id }, f.label), input,
      f.hint ? h('div', { class: 'hint' }, f.hint) : null);
  }
  const ok = $('confirm-ok');
  const cancel = $('confirm-cancel');
  ok.textContent = confirmLabel;
  ok.className = danger ? 'primary danger' : 'primary';
  ok.disabled = false;
  cancel.disabled = false;
  return new Promise((resolve) => {
    const finish = (ran) => {
      dialog.oncancel = null;
      if (dialog.open) dialog.close();
      resolve(ran);
    };
    cancel.onclick = () => finish(false);
    dialog.oncancel = () => finish(false);
    ok.onclick = async () => {
      const values = {};
      for (const [id, input] of Object.entries(inputs)) values[id] = input.value.trim();
      ok.disabled = cancel.disabled = true;
      ok.textContent = 'Working…';
      $('confirm-error').textContent = '';
      try {
        const message = await run(values);
        finish(true);
        if (message) toast(message);
      } catch (e) {
        $('confirm-error').textContent = e && e.message ? e.message : String(e);
        ok.disabled = cancel.disabled = false;
        ok.textContent = confirmLabel;
      }
    };
    dialog.showModal();
    const first = Object.values(inputs)[0];
    (first || cancel).focus();
  });
}
