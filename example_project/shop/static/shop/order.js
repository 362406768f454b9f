// While an order waits for its payment, ask the shop for its status and reload when it changes
// (a webhook from the gateway is what changes it).
"use strict";
(function () {
  const box = document.getElementById("order-status");
  if (!box || !box.dataset.poll) return;
  const start = box.dataset.status;
  let tries = 0;
  async function poll() {
    tries += 1;
    try {
      const response = await fetch(box.dataset.statusUrl, { headers: { "Accept": "application/json" } });
      if (response.ok) {
        const body = await response.json();
        if (body.status !== start) { window.location.reload(); return; }
      }
    } catch (err) { /* the shop restarted or the network blinked: try again */ }
    if (tries < 600) window.setTimeout(poll, tries < 20 ? 1000 : 5000);
  }
  window.setTimeout(poll, 1000);
})();
