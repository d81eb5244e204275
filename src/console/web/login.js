// The token login. Shown when the broker answers 401 (authenticationEnabled): the pasted token
// is tried on /admin/v2/clusters before it is kept, so a token the broker refuses is never
// stored; the refusal is said in words.

import { call, setToken, clearToken } from './api.js';
import { $ } from './dom.js';

// Shows the form; `reason` explains why (a token refused, signed out).
export function showLogin(reason) {
  $('app').hidden = true;
  $('sign-out').hidden = true;
  $('who').textContent = '';
  $('login').hidden = false;
  $('login-error').textContent = reason || '';
  $('token').focus();
}

// Wires the form: `onSignedIn()` runs once a token was accepted and stored.
export function setUpLogin(onSignedIn) {
  const submit = async () => {
    const value = $('token').value.trim();
    if (!value) {
      $('login-error').textContent = 'Paste a token first.';
      return;
    }
    $('sign-in').disabled = true;
    $('login-error').textContent = 'Checking the token…';
    try {
      await call('GET', '/admin/v2/clusters', { token: value });
    } catch (e) {
      $('login-error').textContent = e.status === 401
        ? `The broker refused this token (HTTP 401: ${e.reason}). Check that it was made with ` +
          'the broker\'s key (tokenSecretKey or tokenPublicKey) and has not expired.'
        : `Cannot check the token: ${e.message}`;
      $('sign-in').disabled = false;
      return;
    }
    $('sign-in').disabled = false;
    $('token').value = '';
    $('login-error').textContent = '';
    setToken(value);
    $('login').hidden = true;
    onSignedIn();
  };
  $('sign-in').addEventListener('click', submit);
  $('token').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      submit();
    }
  });
  $('sign-out').addEventListener('click', () => {
    clearToken();
    showLogin('Signed out.');
  });
}
