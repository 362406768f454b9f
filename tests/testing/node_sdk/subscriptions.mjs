// The official Node SDK (univapay-node) through every subscription route of the fake gateway.
// Usage: node subscriptions.mjs BASE_URL SECRET JWT STORE_ID TOKEN_ID NEW_TOKEN_ID
// Prints one JSON line per call: {"call": ..., "status": ..., "id": ...}; exits 1 on the first
// call the SDK rejects or whose answer it cannot read.
import SDK from "univapay-node";

const [endpoint, secret, jwt, storeId, tokenId, newTokenId] = process.argv.slice(2);
const sdk = new SDK({ endpoint, jwt, secret });
const said = (call, item) =>
  console.log(JSON.stringify({ call, status: item?.status ?? null, id: item?.id ?? null, item }));

try {
  const created = await sdk.subscriptions.create({
    transactionTokenId: tokenId,
    amount: 1200,
    currency: "JPY",
    period: "monthly",
    metadata: { order: "42" },
  });
  said("create", created);
  const id = created.id;
  said("get", await sdk.subscriptions.get(storeId, id));
  said("poll", await sdk.subscriptions.poll(storeId, id));
  const listed = await sdk.subscriptions.list({ limit: 10 }, undefined, storeId);
  said("list (store)", { id: listed.items.map((s) => s.id).join(","), status: String(listed.hasMore) });
  const all = await sdk.subscriptions.list({ limit: 10 });
  said("list (merchant)", { id: all.items.map((s) => s.id).join(","), status: String(all.hasMore) });
  said("update", await sdk.subscriptions.update(storeId, id, { metadata: { order: "43" } }));
  const charges = await sdk.subscriptions.charges(storeId, id);
  said("charges", { id: charges.items.map((c) => c.id).join(","), status: charges.items[0]?.status });
  const payments = await sdk.subscriptions.payments.list(storeId, id);
  said("scheduled payments", { id: payments.items.map((p) => p.id).join(","), status: String(payments.hasMore) });
  const first = payments.items[0];
  said("scheduled payment", await sdk.subscriptions.payments.get(storeId, id, first.id));
  const paid = await sdk.subscriptions.payments.listCharges(storeId, id, first.id);
  said("scheduled payment charges", { id: paid.items.map((c) => c.id).join(","), status: paid.items[0]?.status });
  said("suspend", await sdk.subscriptions.suspend(storeId, id));
  said("unsuspend", await sdk.subscriptions.unsuspend(storeId, id));
  said("update token", await sdk.subscriptions.updateToken(storeId, id, { transactionTokenId: newTokenId }));
  const simulated = await sdk.subscriptions.simulation(
    { amount: 12000, currency: "JPY", period: "monthly", paymentType: "card",
      installmentPlan: { planType: "fixed_cycles", fixedCycles: 3 } },
    undefined,
    storeId,
  );
  said("simulation", { id: String(simulated.length), status: simulated[0]?.dueDate ?? null });
  await sdk.subscriptions.delete(storeId, id);
  said("delete", { id, status: "deleted" });
  said("get after delete", await sdk.subscriptions.get(storeId, id));
} catch (error) {
  console.log(JSON.stringify({ error: String(error), code: error?.code ?? null, status: error?.status ?? null, errors: error?.errors ?? null }));
  process.exit(1);
}
