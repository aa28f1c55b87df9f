import { html, type SafeHtml } from "./html.ts";
import { type PageContext, renderPage } from "./layout.ts";

/**
 * Account pages: static HTML whose forms are driven by assets/account.js against the accounts API
 * (same origin, or deployment.apiBaseUrl with CORS). Nothing here depends on data, so they are
 * the same on every build.
 */

const NOSCRIPT = html`<noscript><p class="notice">Signing up, signing in and managing API keys need JavaScript: these pages talk to the portal's account API. Browsing mods does not.</p></noscript>`;

/** The live region every account page reports into (errors included, in plain words). */
const MESSAGE = html`<p id="message" class="message" role="status" aria-live="polite"></p>`;

/**
 * The submit button of a form that is on screen before its script has run (sign-up, verify, sign-in,
 * confirm): disabled in the HTML, beside a note that the form is loading, until assets/account.js
 * has wired the form (formReady in api.js enables it and drops the note). Enabled from the start, a
 * click or an Enter before the module script ran would submit the form natively: the page would
 * reload with no message, and the verify and confirm pages would lose the token in their address.
 * The pages are static files (the API may be on another origin), so there is no server-side form
 * handler to fall back to. The note's second sentence shows only if the script never comes
 * (site.css), and the note stays out of the way when JavaScript is off (the noscript notice says it).
 */
function submitButton(label: string): SafeHtml {
  return html`<div><button type="submit" disabled data-until-ready>${label}</button> <span class="note loading" data-until-ready>Loading the form…<span class="stalled"> If this stays, reload the page.</span></span></div>`;
}

function accountPage(
  ctx: PageContext,
  page: string,
  title: string,
  root: string,
  main: SafeHtml,
  noReferrer = false,
) {
  return renderPage(ctx, {
    title,
    root,
    section: "account",
    scripts: ["account.js"],
    noReferrer,
    main: html`<div data-page="${page}">
${main}
${NOSCRIPT}
</div>`,
  });
}

export function renderAccountHomePage(ctx: PageContext): string {
  return accountPage(
    ctx,
    "account",
    "Your account",
    "../",
    html`<h1>Your account</h1>
${MESSAGE}
<section id="signed-out" hidden>
<p>You are not signed in. <a href="signin/">Sign in with an email link</a> or <a href="signup/">create a free account</a>.</p>
</section>
<section id="signed-in" hidden aria-labelledby="who-h">
<h2 id="who-h">Signed in</h2>
<dl class="facts">
<dt>Name</dt><dd id="who-name"></dd>
<dt>Email</dt><dd id="who-email"></dd>
<dt>Roles</dt><dd id="who-roles"></dd>
</dl>
<p><button type="button" id="sign-out">Sign out</button> <a id="moderation-link" href="../moderation/" hidden>Open the moderation queue</a></p>
</section>
<section id="keys" hidden aria-labelledby="keys-h">
<h2 id="keys-h">API keys</h2>
<p>The mod manager uses an API key for fast downloads. A key is shown once, when you create it; store it in the manager and revoke it here when you no longer need it.</p>
<form id="create-key" class="stack">
<div><label for="key-name">Name of the new key</label><input id="key-name" name="name" type="text" maxlength="100" required autocomplete="off" placeholder="e.g. Desktop manager"></div>
<div><button type="submit">Create API key</button></div>
</form>
<section id="new-key" class="new-key" hidden tabindex="-1" aria-labelledby="new-key-h">
<h3 id="new-key-h">Your new API key</h3>
<p><strong>Copy it now: it will not be shown again.</strong></p>
<p><label for="new-key-value">API key</label><input id="new-key-value" type="text" readonly spellcheck="false" autocomplete="off"> <button type="button" id="copy-key">Copy</button></p>
</section>
<table id="key-table" class="keys">
<caption>Your keys</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Key starts with</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">State</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
<tbody id="key-rows"></tbody>
</table>
<p id="no-keys" hidden>You have no API keys yet.</p>
</section>`,
  );
}

export function renderSignUpPage(ctx: PageContext): string {
  return accountPage(
    ctx,
    "signup",
    "Create an account",
    "../../",
    html`<h1>Create an account</h1>
<p>Accounts are free. There is no password: you sign in with a one-time link sent to your email address.</p>
<form id="signup" class="stack">
<div><label for="email">Email address</label><input id="email" name="email" type="email" required autocomplete="email" maxlength="254"></div>
<div><label for="display-name">Display name</label><input id="display-name" name="displayName" type="text" required autocomplete="nickname" maxlength="64"></div>
<fieldset><legend>I want to</legend>
<div><input id="role-player" type="radio" name="role" value="player" checked><label for="role-player">Download mods (player)</label></div>
<div><input id="role-modder" type="radio" name="role" value="modder"><label for="role-modder">Publish mods too (modder)</label></div>
</fieldset>
${submitButton("Create account")}
</form>
${MESSAGE}
<p id="dev-link" class="dev" hidden></p>
<p>Already have an account? <a href="../signin/">Sign in</a>.</p>`,
  );
}

export function renderVerifyPage(ctx: PageContext): string {
  return accountPage(
    ctx,
    "verify",
    "Verify your email",
    "../../",
    html`<h1>Verify your email address</h1>
<p>You followed the link from your verification email. Confirm to finish creating your account.</p>
<form id="verify" class="stack">
${submitButton("Verify my email address")}
</form>
${MESSAGE}
<p id="next" hidden>Your address is verified. <a href="../signin/">Sign in now</a>.</p>`,
    true,
  );
}

export function renderSignInPage(ctx: PageContext): string {
  return accountPage(
    ctx,
    "signin",
    "Sign in",
    "../../",
    html`<h1>Sign in</h1>
<p>Enter the email address of your account and we will send you a one-time sign-in link.</p>
<form id="signin" class="stack">
<div><label for="email">Email address</label><input id="email" name="email" type="email" required autocomplete="email" maxlength="254"></div>
${submitButton("Email me a sign-in link")}
</form>
${MESSAGE}
<p id="dev-link" class="dev" hidden></p>
<p>No account yet? <a href="../signup/">Create one</a>.</p>`,
  );
}

export function renderConfirmPage(ctx: PageContext): string {
  return accountPage(
    ctx,
    "confirm",
    "Finish signing in",
    "../../",
    html`<h1>Finish signing in</h1>
<p>You followed a sign-in link. Continue to start your session on this device; the link then stops working.</p>
<form id="confirm" class="stack">
${submitButton("Continue signing in")}
</form>
${MESSAGE}`,
    true,
  );
}
