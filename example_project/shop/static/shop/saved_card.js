// Pay with the saved card. When the store asks the card's security code, the browser gives it
// to the gateway (a PATCH of the token's data.cvv, which the widget's JWT may send, and nothing
// else); the shop gets only "a code was given" and charges the saved card.
"use strict";
(function () {
  const form = document.getElementById("saved-card-form");
  const errorBox = document.getElementById("checkout-error");
  const texts = JSON.parse(document.getElementById("checkout-texts").textContent);
  if (!form) return;
  const button = document.getElementById("saved-card-button");

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = false;
    button.disabled = false;
    button.textContent = button.dataset.label;
  }

  async function submit(event) {
    const cvv = document.getElementById("saved-card-cvv");
    button.dataset.label = button.dataset.label || button.textContent;
    if (!cvv) {  // no code asked: the form goes to the shop as it is
      button.disabled = true;
      return;
    }
    event.preventDefault();
    errorBox.hidden = true;
    const code = String(cvv.value).trim();
    if (!/^\d{3,4}$/.test(code)) {
      showError(texts.cvv);
      return;
    }
    button.disabled = true;
    button.textContent = texts.working;
    const url = form.dataset.gatewayUrl + "/stores/" + form.dataset.storeId + "/tokens/" + form.dataset.tokenId;
    let response;
    try {
      response = await fetch(url, {
        method: "PATCH",
        headers: { "Authorization": "Bearer " + form.dataset.jwt, "Content-Type": "application/json" },
        body: JSON.stringify({ data: { cvv: code } }),
      });
    } catch (err) {
      showError(texts.unreachable);
      return;
    }
    if (!response.ok) {
      showError(response.status >= 500 ? texts.unreachable : texts.cvv);
      return;
    }
    form.elements.namedItem("cvv_given").value = "1";
    HTMLFormElement.prototype.submit.call(form);
  }

  form.addEventListener("submit", submit);
})();
