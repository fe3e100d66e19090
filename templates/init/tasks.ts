// Three tasks on the shop: one that only reads, one that writes, one that needs several steps.
// A verifier derives what it expects from `initial` (the world before the agent), never from a
// copy of the data, and returns checks. `mayChange` lists what the agent may change: any other
// change fails the run.
import { check, defineTask } from 'silo';
import { shop } from './environment.js';

export default [
  defineTask({
    id: 'shop/count-pending',
    environment: shop,
    instruction: 'How many orders are still pending? Answer with the number.',
    verify: ({ initial, output }) => {
      const pending = Object.values(initial.orders).filter((o) => o.status === 'pending').length;
      return [check.contains('the answer gives the number of pending orders', output, pending)];
    },
    tags: ['read'],
    solution: { calls: [{ name: 'list_orders', input: { status: 'pending' } }], output: '2' },
  }),
  defineTask({
    id: 'shop/refund-damaged',
    environment: shop,
    instruction: 'Order o2 arrived damaged. Refund it, with the reason "damaged".',
    verify: ({ final }) => [
      check.equal('o2 is refunded', final.orders.o2?.status, 'refunded'),
      check.equal('the reason is recorded', final.orders.o2?.refundReason, 'damaged'),
    ],
    mayChange: ['orders.o2'],
    tags: ['write'],
    solution: { calls: [{ name: 'refund_order', input: { order_id: 'o2', reason: 'damaged' } }], output: 'Refunded o2.' },
  }),
  defineTask({
    id: 'shop/refund-latest',
    environment: shop,
    instruction: 'The customer bea@example.com says her most recent order never arrived. Find it and refund it (reason: "not received"), then tell her which item was refunded.',
    verify: ({ initial, final, output }) => {
      const latest = Object.values(initial.orders)
        .filter((o) => o.customer === 'bea@example.com')
        .sort((a, b) => b.placedAt.localeCompare(a.placedAt))[0]!;
      return [
        check.equal(`her latest order (${latest.id}) is refunded`, final.orders[latest.id]?.status, 'refunded'),
        check.contains('the answer names the refunded item', output, latest.item),
      ];
    },
    mayChange: ['orders.*.status', 'orders.*.refundReason'],
    tags: ['write', 'multi-step'],
    solution: {
      calls: [
        { name: 'list_orders', input: { customer: 'bea@example.com' } },
        { name: 'refund_order', input: { order_id: 'o3', reason: 'not received' } },
      ],
      output: 'I refunded your rug (order o3).',
    },
  }),
];
