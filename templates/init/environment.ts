// A small world for Silo: a shop's orders, and three tools that act on them.
// Tools receive the live world (`state`) and a validated input; throwing an Error is how a tool
// says no (the agent receives your message as a failed call).
import { defineEnvironment, defineTool } from 'silo';

export interface Order {
  id: string;
  customer: string;
  item: string;
  placedAt: string;
  status: 'pending' | 'shipped' | 'delivered' | 'refunded';
  refundReason?: string;
}

export interface Shop {
  orders: Record<string, Order>;
}

const seed: Shop = {
  orders: {
    o1: { id: 'o1', customer: 'ana@example.com', item: 'kettle', placedAt: '2026-03-02', status: 'delivered' },
    o2: { id: 'o2', customer: 'bea@example.com', item: 'lamp', placedAt: '2026-03-04', status: 'delivered' },
    o3: { id: 'o3', customer: 'bea@example.com', item: 'rug', placedAt: '2026-03-09', status: 'shipped' },
    o4: { id: 'o4', customer: 'cai@example.com', item: 'mug', placedAt: '2026-03-10', status: 'pending' },
    o5: { id: 'o5', customer: 'ana@example.com', item: 'teapot', placedAt: '2026-03-11', status: 'pending' },
  },
};

export const shop = defineEnvironment<Shop>({
  name: 'shop',
  // A NEW world every time: Silo refuses one it has seen before.
  createState: () => structuredClone(seed),
  tools: [
    defineTool({
      name: 'list_orders',
      description: 'List orders, optionally only those of one customer (by email) or in one status.',
      inputSchema: {
        type: 'object',
        properties: {
          customer: { type: 'string', description: "the customer's email" },
          status: { type: 'string', enum: ['pending', 'shipped', 'delivered', 'refunded'] },
        },
      } as const,
      readOnly: true,
      run: (state, input) =>
        Object.values(state.orders).filter(
          (o) => (input.customer === undefined || o.customer === input.customer) && (input.status === undefined || o.status === input.status),
        ),
    }),
    defineTool({
      name: 'get_order',
      description: 'Get one order by id.',
      inputSchema: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } as const,
      readOnly: true,
      run: (state, input) => {
        const order = state.orders[input.order_id];
        if (!order) throw new Error(`No order with id '${input.order_id}'`);
        return order;
      },
    }),
    defineTool({
      name: 'refund_order',
      description: 'Refund an order that was shipped or delivered, giving the reason.',
      inputSchema: {
        type: 'object',
        properties: { order_id: { type: 'string' }, reason: { type: 'string', minLength: 1 } },
        required: ['order_id', 'reason'],
      } as const,
      run: (state, input) => {
        const order = state.orders[input.order_id];
        if (!order) throw new Error(`No order with id '${input.order_id}'`);
        if (order.status !== 'shipped' && order.status !== 'delivered') throw new Error(`Order ${order.id} is ${order.status}; only shipped or delivered orders can be refunded`);
        order.status = 'refunded';
        order.refundReason = input.reason;
        return order;
      },
    }),
  ],
});
