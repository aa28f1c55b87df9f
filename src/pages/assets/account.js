// Sign-up, email verification, magic-link sign-in and API keys. The CSRF token comes from the
// session response and lives only in memory; it goes out as x-svc-csrf on every write.
import {
  ApiError,
  currentSession,
  describeError,
  el,
  formatDate,
  formReady,
  request,
  say,
  takeUrlParams,
} from "./api.js";

const page = document.querySelector("[data-page]")?.getAttribute("data-page");

function busy(form, on) {
  for (const control of form.querySelectorAll("button, input, textarea, select")) control.disabled = on;
}

function fail(error) {
  say(describeError(error), { error: true });
}

/** In the developer email mode the API returns the token: offer the link the email would carry. */
function showDevLink(href, label) {
  const box = document.getElementById("dev-link");
  if (!box) return;
  box.replaceChildren(el("strong", "Developer email mode: "), el("a", label, { href }));
  box.hidden = false;
}

async function signUpPage() {
  const form = document.getElementById("signup");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    busy(form, true);
    say("Creating your account…");
    try {
      const result = await request("POST", "accounts", {
        body: {
          email: String(data.get("email")).trim(),
          displayName: String(data.get("displayName")).trim(),
          role: String(data.get("role") || "player"),
        },
      });
      if (result?.status === "verified") {
        say("Your account is ready. You can sign in now.");
      } else {
        say("Check your email: we sent a link to verify your address. It expires soon, so use it today.");
      }
      if (result?.devToken && result?.accountId) {
        const params = new URLSearchParams({ account: result.accountId, token: result.devToken });
        showDevLink(`../verify/?${params}`, "verify this address now");
      }
      form.reset();
    } catch (error) {
      fail(error);
    } finally {
      busy(form, false);
    }
  });
  formReady(form);
}

async function verifyPage() {
  const { account, token } = takeUrlParams(["account", "token"]);
  const form = document.getElementById("verify");
  if (!account || !token) {
    say("This page needs the link from your verification email; open that link again.", { error: true });
    formReady(form, false);
    return;
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    busy(form, true);
    try {
      await request("POST", `accounts/${encodeURIComponent(account)}/verify-email`, { body: { token } });
      say("Thank you: your email address is verified.");
      document.getElementById("next").hidden = false;
      form.hidden = true;
    } catch (error) {
      fail(error);
      busy(form, false);
    }
  });
  formReady(form);
}

async function signInPage() {
  const form = document.getElementById("signin");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const email = String(new FormData(form).get("email")).trim();
    busy(form, true);
    say("Sending…");
    try {
      const result = await request("POST", "auth/magic-link/request", { body: { email } });
      // The answer is the same whether or not the address has an account.
      say("If an account exists for that address, a sign-in link is on its way. Open it on this device.");
      if (result?.devToken) {
        showDevLink(`../confirm/?${new URLSearchParams({ token: result.devToken })}`, "sign in now");
      }
    } catch (error) {
      fail(error);
    } finally {
      busy(form, false);
    }
  });
  formReady(form);
}

async function confirmPage() {
  const { token } = takeUrlParams(["token"]);
  const form = document.getElementById("confirm");
  if (!token) {
    say("This page needs the link from your sign-in email; open that link again.", { error: true });
    formReady(form, false);
    return;
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    busy(form, true);
    say("Signing you in…");
    try {
      await request("POST", "auth/magic-link/confirm", { body: { token } });
      say("You are signed in. Opening your account…");
      location.assign("../");
    } catch (error) {
      fail(error);
      busy(form, false);
    }
  });
  formReady(form);
}

async function accountPage() {
  let session;
  try {
    session = await currentSession();
  } catch (error) {
    fail(error);
    return;
  }
  if (!session) {
    document.getElementById("signed-out").hidden = false;
    return;
  }
  const csrf = session.csrfToken;
  const roles = Array.isArray(session.roles) ? session.roles : [];
  document.getElementById("who-name").textContent = session.displayName;
  document.getElementById("who-email").textContent = session.email || "—";
  document.getElementById("who-roles").textContent = roles.join(", ") || "—";
  document.getElementById("moderation-link").hidden = !roles.some((r) => r === "moderator" || r === "admin");

  document.getElementById("sign-out").addEventListener("click", async () => {
    try {
      await request("DELETE", "auth/session", { csrf });
      location.reload();
    } catch (error) {
      fail(error);
    }
  });

  const rows = document.getElementById("key-rows");
  const table = document.getElementById("key-table");
  const none = document.getElementById("no-keys");

  async function refresh() {
    const keys = (await request("GET", "auth/api-keys"))?.apiKeys ?? [];
    rows.replaceChildren();
    for (const key of keys) {
      const row = el("tr");
      row.dataset.keyId = key.id;
      row.append(
        el("td", key.name || "(unnamed)"),
        el("td", key.prefix ? `${key.prefix}…` : "—"),
        el("td", formatDate(key.createdAt)),
        el("td", key.lastUsedAt ? formatDate(key.lastUsedAt) : "never"),
        el("td", key.revokedAt ? `revoked ${formatDate(key.revokedAt)}` : "active"),
      );
      const action = el("td");
      if (!key.revokedAt) {
        const revoke = el("button", "Revoke", { type: "button", class: "secondary" });
        revoke.setAttribute("aria-label", `Revoke key ${key.name || key.prefix || key.id}`);
        revoke.addEventListener("click", async () => {
          if (!confirm(`Revoke "${key.name || key.prefix}"? The manager using it will stop downloading.`))
            return;
          revoke.disabled = true;
          try {
            await request("DELETE", `auth/api-keys/${encodeURIComponent(key.id)}`, { csrf });
            say(`Revoked "${key.name || key.prefix}". Downloads with it are now refused.`);
            await refresh();
            document.getElementById("key-name").focus();
          } catch (error) {
            fail(error);
            revoke.disabled = false;
          }
        });
        action.append(revoke);
      }
      row.append(action);
      rows.append(row);
    }
    table.hidden = keys.length === 0;
    none.hidden = keys.length > 0;
  }

  const create = document.getElementById("create-key");
  const panel = document.getElementById("new-key");
  const value = document.getElementById("new-key-value");
  create.addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = String(new FormData(create).get("name")).trim();
    busy(create, true);
    try {
      const result = await request("POST", "auth/api-keys", { body: { name }, csrf });
      const secret = result?.secret;
      if (typeof secret !== "string")
        throw new ApiError(500, "invalid_response", "The API did not return a key.");
      value.value = secret;
      panel.hidden = false;
      panel.focus();
      say(`Created "${name}". Copy the key now: it is shown only once.`);
      create.reset();
      await refresh();
    } catch (error) {
      fail(error);
    } finally {
      busy(create, false);
    }
  });
  document.getElementById("copy-key").addEventListener("click", async () => {
    value.select();
    try {
      await navigator.clipboard.writeText(value.value);
      say("Copied the key to the clipboard.");
    } catch {
      say("Select the key and copy it (Ctrl+C or Cmd+C).");
    }
  });
  // Shown once every control in them is wired.
  document.getElementById("signed-in").hidden = false;
  document.getElementById("keys").hidden = false;

  try {
    await refresh();
  } catch (error) {
    fail(error);
  }
}

const handlers = {
  signup: signUpPage,
  verify: verifyPage,
  signin: signInPage,
  confirm: confirmPage,
  account: accountPage,
};
handlers[page]?.();
