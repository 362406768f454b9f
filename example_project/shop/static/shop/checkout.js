// Checkout: create the transaction token in the browser with the widget's JWT (never the
// secret), then hand only the token's id to the shop, which creates the charge.
"use strict";
(function () {
  const form = document.getElementById("checkout");
  const chargeForm = document.getElementById("charge-form");
  const errorBox = document.getElementById("checkout-error");
  const button = document.getElementById("pay-button");
  const texts = JSON.parse(document.getElementById("checkout-texts").textContent);
  if (!form || !chargeForm) return;

  function selectedType() {
    return form.querySelector("input[name=payment_type]:checked").value;
  }

  function showDetails() {
    const type = selectedType();
    form.querySelectorAll("fieldset.details").forEach(function (fieldset) {
      fieldset.hidden = fieldset.dataset.paymentType !== type;
    });
  }

  function value(name) {
    const field = form.elements.namedItem(name);
    return field ? String(field.value).trim() : "";
  }

  function tokenBody(type) {
    let data = {};
    if (type === "card") {
      data = {
        cardholder: value("cardholder"),
        card_number: value("card_number").replace(/[\s-]/g, ""),
        exp_month: parseInt(value("exp_month"), 10),
        exp_year: parseInt(value("exp_year"), 10),
        cvv: value("cvv"),
      };
    } else if (type === "konbini") {
      data = { customer_name: value("customer_name"), convenience_store: value("convenience_store") };
    } else if (type === "online") {
      // Each brand opens its payment page its own way (a form POST, or a plain GET).
      const brand = form.elements.namedItem("brand");
      data = { brand: value("brand"), call_method: brand.selectedOptions[0].dataset.callMethod };
    }
    // "subscription" for a product sold by the month (the page says which): the gateway
    // charges that token on the subscription's schedule. A card the customer saves is a
    // "recurring" token: the shop may charge it again later.
    let tokenType = form.dataset.tokenType || "one_time";
    if (tokenType === "one_time" && saving()) tokenType = "recurring";
    return { payment_type: type, type: tokenType, email: value("email"), data: data };
  }

  function saving() {
    const box = form.elements.namedItem("save_card");
    return selectedType() === "card" && Boolean(box && box.checked);
  }

  function createToken(body) {
    return fetch(form.dataset.gatewayUrl + "/tokens", {
      method: "POST",
      headers: { "Authorization": "Bearer " + form.dataset.jwt, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
  }

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = false;
    button.disabled = false;
  }

  function rejection(body) {
    const errors = (body && Array.isArray(body.errors)) ? body.errors : [];
    const reason = errors.map(function (e) { return texts.reasons[e.reason]; }).find(Boolean);
    if (reason) return reason;
    // Only fields a customer can recognise: the gateway's internal names never reach the page.
    const names = errors.map(function (e) { return texts.fields[e.field]; }).filter(Boolean);
    if (!names.length) return texts.failed;
    return texts.rejected.replace("%(fields)s", Array.from(new Set(names)).join(", "));
  }

  async function submit(event) {
    event.preventDefault();
    errorBox.hidden = true;
    button.disabled = true;
    button.dataset.label = button.dataset.label || button.textContent;
    button.textContent = texts.working;
    let response;
    try {
      response = await createToken(tokenBody(selectedType()));
    } catch (err) {
      button.textContent = button.dataset.label;
      showError(texts.unreachable);
      return;
    }
    const body = await response.json().catch(function () { return null; });
    if (!response.ok || !body || !body.id) {
      button.textContent = button.dataset.label;
      showError(response.status >= 500 ? texts.unreachable : rejection(body));
      return;
    }
    chargeForm.elements.namedItem("transaction_token_id").value = body.id;
    // What the customer chose: the shop refuses a subscription a payment type cannot pay.
    // (The change-card page's form has no such field: only a card makes its token.)
    const chosen = chargeForm.elements.namedItem("payment_type");
    if (chosen) chosen.value = selectedType();
    const saved = chargeForm.elements.namedItem("saved_card_token_id");
    if (saved && saving()) saved.value = await savedCardToken(body.id);
    HTMLFormElement.prototype.submit.call(chargeForm);
  }

  // The card to keep: the payment's own token, or, beside a subscription's token (which
  // only the gateway charges), a "recurring" token of the same card. Not made: not kept.
  async function savedCardToken(paymentTokenId) {
    if (form.dataset.tokenType !== "subscription") return paymentTokenId;
    try {
      const response = await createToken(Object.assign(tokenBody("card"), { type: "recurring" }));
      const body = await response.json();
      return response.ok && body && body.id ? body.id : "";
    } catch (err) {
      return "";
    }
  }

  form.querySelectorAll("input[name=payment_type]").forEach(function (radio) {
    radio.addEventListener("change", showDetails);
  });
  form.addEventListener("submit", submit);
  showDetails();
})();
