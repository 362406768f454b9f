// The demo bank: POST the fake gateway's "customer paid" control for this charge.
"use strict";
(function () {
  const button = document.getElementById("demo-bank-pay");
  const result = document.getElementById("demo-bank-result");
  if (!button) return;
  // The button comes disabled: a click before this script ran would do nothing.
  button.disabled = false;
  button.addEventListener("click", async function () {
    button.disabled = true;
    let ok = false;
    try {
      const response = await fetch(button.dataset.completeUrl, { method: "POST" });
      ok = response.ok;
    } catch (err) { ok = false; }
    result.textContent = ok ? result.dataset.done : result.dataset.failed;
    result.hidden = false;
    result.dataset.state = ok ? "done" : "failed";
    button.disabled = ok;
  });
})();
