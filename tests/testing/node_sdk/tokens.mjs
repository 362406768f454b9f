// The official Node SDK (univapay-node) through the fake gateway's transaction token routes:
// a saved card (recurring) made by the widget's key, read, listed, updated, renewed and
// deleted by the store's application token, and a subscription token.
// Usage: node tokens.mjs BASE_URL SECRET JWT WIDGET_JWT STORE_ID
// Prints one JSON line per call, like subscriptions.mjs; exits 1 on the first rejected call.
import SDK from "univapay-node";

const [endpoint, secret, jwt, widgetJwt, storeId] = process.argv.slice(2);
const app = new SDK({ endpoint, jwt, secret });
const widget = new SDK({ endpoint, jwt: widgetJwt });
const said = (call, item) =>
  console.log(JSON.stringify({ call, status: item?.status ?? null, id: item?.id ?? null, item }));
const card = { cardholder: "TARO YAMADA", cardNumber: "4242424242424242", expMonth: 12, expYear: 2031, cvv: "123" };

try {
  const saved = await widget.transactionTokens.create({
    paymentType: "card", email: "taro@example.jp", type: "recurring", usageLimit: "monthly", data: card,
  });
  said("create recurring", saved);
  said("get", await app.transactionTokens.get(storeId, saved.id));
  const listed = await app.transactionTokens.list({ limit: 10 }, undefined, storeId);
  said("list (store)", { id: listed.items.map((t) => t.id).join(","), status: String(listed.hasMore) });
  said("update", await app.transactionTokens.update(storeId, saved.id, { email: "taro@example.com" }));
  const renewed = await app.transactionTokens.renew(storeId, saved.id, {
    data: { cardholder: "TARO YAMADA", expMonth: 12, expYear: 2033 },
  });
  said("renew", renewed);
  await app.transactionTokens.delete(storeId, renewed.id);
  said("delete", { id: renewed.id, status: "deleted" });
  said("get after delete", await app.transactionTokens.get(storeId, renewed.id));
  const sub = await widget.transactionTokens.create({
    paymentType: "card", email: "taro@example.jp", type: "subscription", data: card,
  });
  said("create subscription", sub);
} catch (error) {
  console.log(JSON.stringify({ error: String(error), errors: error?.errors ?? null }));
  process.exit(1);
}
