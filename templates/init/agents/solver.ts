// A scripted agent that solves the three shop tasks without a model: a baseline that passes, to
// see the harness work. An agent is one function; it sees tool schemas and calls tools through
// `callTool`, which never throws (a failed call is a value the agent can read).
import type { AgentArgs } from 'silo';

interface Order {
  id: string;
  item: string;
  placedAt: string;
}

export default async function solver({ instruction, callTool }: AgentArgs): Promise<string> {
  if (instruction.startsWith('How many orders are still pending')) {
    const found = await callTool('list_orders', { status: 'pending' });
    return found.ok ? String((found.value as Order[]).length) : `I could not list the orders: ${found.error.message}`;
  }
  if (instruction.startsWith('Order o2 arrived damaged')) {
    const refund = await callTool('refund_order', { order_id: 'o2', reason: 'damaged' });
    return refund.ok ? 'Refunded order o2.' : `The refund failed: ${refund.error.message}`;
  }
  const email = /[\w.]+@[\w.]+\w/.exec(instruction)?.[0];
  const found = await callTool('list_orders', { customer: email });
  if (!found.ok) return `I could not list the orders: ${found.error.message}`;
  const latest = (found.value as Order[]).sort((a, b) => b.placedAt.localeCompare(a.placedAt))[0];
  if (!latest) return `I found no order of ${email}.`;
  const refund = await callTool('refund_order', { order_id: latest.id, reason: 'not received' });
  return refund.ok ? `I refunded your ${latest.item} (order ${latest.id}).` : `The refund failed: ${refund.error.message}`;
}
