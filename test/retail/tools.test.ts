/**
 * Unit tests of the retail world: the calculator, Python's rounding and float text, and each of the
 * 16 tools on the real data (a success, and the failures each tool can have, with the exact
 * messages; a failed call changes nothing). Also: the schemas are tools.json's, and every gold action
 * of the 635 tasks fits its tool's schema, so Silo never refuses a gold call as invalid_input.
 */
import { Ajv } from 'ajv';
import { beforeEach, describe, expect, it } from 'vitest';
import { calculate } from '../../fixtures/retail/calculate.js';
import { retail } from '../../fixtures/retail/environment.js';
import { SPLITS, goldTasks, readRetailJson } from '../../fixtures/retail/gold.js';
import { pyFloatText, pyRound2 } from '../../fixtures/retail/python.js';
import { replayContext, retailSeed, type RetailWorld } from '../../fixtures/retail/world.js';

describe('calculate', () => {
  it.each([
    ['2 + 3 * 4', '14.0'],
    ['(2 + 3) * 4', '20.0'],
    ['10 - 4 - 3', '3.0'],
    ['8 / 4 / 2', '1.0'],
    ['2 * 3 / 4', '1.5'],
    ['7 / 2', '3.5'],
    ['((1 + 2) * (3 + 4))', '21.0'],
    ['  1+2  ', '3.0'],
  ])('respects precedence and parentheses: %s = %s', (expression, result) => {
    expect(calculate(expression)).toBe(result);
  });

  it.each([
    ['-3 + 5', '2.0'],
    ['2 * -3', '-6.0'],
    ['--4', '4.0'],
    ['-(2 + 3)', '-5.0'],
    ['+7', '7.0'],
    ['4 - -1', '5.0'],
    // Python: an int has no -0, a float does.
    ['0 * -1', '0.0'],
    ['-0', '0.0'],
    ['-0.0', '-0.0'],
    ['0 / -5', '-0.0'],
  ])('handles unary minus and plus: %s = %s', (expression, result) => {
    expect(calculate(expression)).toBe(result);
  });

  it.each([
    ['3', '3.0'],
    ['12.5', '12.5'],
    ['1 / 3', '0.33'],
    ['2 / 3', '0.67'],
    ['0.1 + 0.2', '0.3'],
    ['.5 + 1.', '1.5'],
    ['10000000000000000', '1e+16'],
    ['9999999999999998', '9999999999999998.0'],
    ['3131.1 + 4777.75 + 367.38', '8276.23'],
    ['2.675', '2.67'],
    ['0.125', '0.12'],
    ['1.005', '1.0'],
    // Integers are exact, as in Python: 2^53 + 1 - 2^53 is 1, not 0.
    ['9007199254740993 - 9007199254740992', '1.0'],
  ])('writes the rounded result as Python writes a float: %s = %s', (expression, result) => {
    expect(calculate(expression)).toBe(result);
  });

  it('fails on division by zero with the messages Python gives', () => {
    expect(() => calculate('1 / 0')).toThrow(/^division by zero$/);
    expect(() => calculate('1 / (2 - 2)')).toThrow(/^division by zero$/);
    expect(() => calculate('1.5 / 0')).toThrow(/^float division by zero$/);
  });

  it.each(['2 ^ 3', 'abs(-1)', '1e5', '2, 3', 'x + 1', '1_000', '2 % 3'])('rejects invalid characters: %s', (expression) => {
    expect(() => calculate(expression)).toThrow(/^invalid characters in expression$/);
  });

  it.each(['', '   ', '1 +', '(1 + 2', '1 + 2)', '1 2', '1..2', '.', '()', '2 ** 3', '7 // 2', '01', '* 2'])(
    'fails on a malformed expression with a message: %j',
    (expression) => {
      expect(() => calculate(expression)).toThrow(/^invalid syntax: /);
    },
  );

  it('never evaluates code: only arithmetic characters get through', () => {
    expect(() => calculate('process.exit(1)')).toThrow('invalid characters in expression');
  });
});

describe('Python rounding and float text', () => {
  it.each([
    [2.675, 2.67], // 2.67499999… in binary
    [0.125, 0.12], // an exact tie: to even
    [0.375, 0.38],
    [0.625, 0.62],
    [0.875, 0.88],
    [10.125, 10.12],
    [1.005, 1.0], // 1.00499999…
    [0.135, 0.14], // 0.13500000…01
    [1.115, 1.11],
    [2.345, 2.35],
    [-0.125, -0.12],
    [-2.675, -2.67],
    [123.456, 123.46],
    [2.5, 2.5],
    [1e22, 1e22],
  ])('round(%d, 2) = %d', (x, rounded) => {
    expect(pyRound2(x)).toBe(rounded);
  });

  it('keeps the sign of zero as Python does', () => {
    expect(Object.is(pyRound2(-0.001), -0)).toBe(true);
    expect(Object.is(pyRound2(0.001), 0)).toBe(true);
  });

  it('differs from Math.round(x * 100) / 100 where Python does', () => {
    expect(Math.round(2.675 * 100) / 100).toBe(2.68); // 2.675 * 100 is 267.5 in doubles
    expect(pyRound2(2.675)).toBe(2.67);
    expect(Math.round(1.115 * 100) / 100).toBe(1.12);
    expect(pyRound2(1.115)).toBe(1.11);
    expect(Math.round(0.125 * 100) / 100).toBe(0.13);
    expect(pyRound2(0.125)).toBe(0.12);
  });

  it.each([
    [3, '3.0'],
    [12.5, '12.5'],
    [-7.25, '-7.25'],
    [0, '0.0'],
    [-0, '-0.0'],
    [0.0001, '0.0001'],
    [0.00001, '1e-05'],
    [1.5e-5, '1.5e-05'],
    [1e16, '1e+16'],
    [2.5e20, '2.5e+20'],
    [123456789012345.67, '123456789012345.67'],
    [0.1 + 0.2, '0.30000000000000004'],
    [Infinity, 'inf'],
    [NaN, 'nan'],
  ])('str(%d) = %s', (x, text) => {
    expect(pyFloatText(x)).toBe(text);
  });
});

const ctx = replayContext();
/** The data as read from the files; the tests only read it. */
const before: RetailWorld = retailSeed();
/** A fresh world per tool test. */
let world: RetailWorld;

function tool(name: string) {
  const found = retail.tools.find((t) => t.name === name);
  if (!found) throw new Error(`no tool ${name}`);
  return found;
}

/** Runs a tool on the test world and returns a copy of what it returned. */
function call(name: string, input: Record<string, unknown>): any {
  return structuredClone(tool(name).run(world, input, ctx));
}

/** The call must throw exactly `message` and leave the world as it was. */
function fails(name: string, input: Record<string, unknown>, message: string): void {
  const snapshot = JSON.stringify(world);
  expect(() => tool(name).run(world, input, ctx)).toThrow(new Error(message));
  expect(JSON.stringify(world) === snapshot, `${name} changed the world although it failed`).toBe(true);
}

describe('the retail environment', () => {
  it('has the 16 tools of tools.json, with its descriptions and schemas, readOnly on those that never write', () => {
    const specs = readRetailJson<{ name: string; description: string; parameters: unknown }[]>('./tools.json');
    expect(retail.tools.map((t) => t.name)).toEqual(specs.map((s) => s.name));
    for (const spec of specs) {
      expect(tool(spec.name).inputSchema).toEqual(spec.parameters);
      expect(tool(spec.name).description).toBe(spec.description);
    }
    const writers = retail.tools.filter((t) => !t.readOnly).map((t) => t.name);
    expect(writers.sort()).toEqual([
      'cancel_pending_order',
      'exchange_delivered_order_items',
      'modify_pending_order_address',
      'modify_pending_order_items',
      'modify_pending_order_payment',
      'modify_user_address',
      'return_delivered_order_items',
    ]);
  });

  it('creates a fresh deep copy of the data files on every call', async () => {
    const a = (await retail.createState(ctx)) as RetailWorld;
    const b = (await retail.createState(ctx)) as RetailWorld;
    expect(a).not.toBe(b);
    expect(a.orders['#W2611340']).not.toBe(b.orders['#W2611340']);
    expect(a).toEqual(b);
    expect(Object.keys(a)).toEqual(['users', 'orders', 'products']);
    expect([Object.keys(a.users).length, Object.keys(a.orders).length, Object.keys(a.products).length]).toEqual([500, 1000, 50]);
    a.orders['#W2611340']!.status = 'cancelled';
    expect(((await retail.createState(ctx)) as RetailWorld).orders['#W2611340']!.status).toBe('processed');
  });

  it('every gold action of the 635 tasks fits its tool schema (closed at the top level, as Silo does)', () => {
    const ajv = new Ajv({ allErrors: true, strict: true });
    const validators = new Map(retail.tools.map((t) => [t.name, ajv.compile({ ...t.inputSchema, additionalProperties: false })]));
    const bad: string[] = [];
    for (const split of SPLITS) {
      for (const task of goldTasks(split)) {
        for (const [k, action] of task.actions.entries()) {
          const validate = validators.get(action.name);
          if (!validate?.(action.kwargs)) bad.push(`retail/${split}/${task.index} action ${k} (${action.name})`);
        }
      }
    }
    expect(bad).toEqual([]);
  });
});

describe('tools', () => {
  beforeEach(() => {
    world = structuredClone(before);
  });

  describe('user tools', () => {
    it('find_user_id_by_email matches the email case-insensitively', () => {
      expect(call('find_user_id_by_email', { email: 'Noah.Brown7922@EXAMPLE.com' })).toBe('noah_brown_6181');
      fails('find_user_id_by_email', { email: 'nobody@example.com' }, 'user not found');
    });

    it('find_user_id_by_name_zip matches names case-insensitively and the zip exactly', () => {
      expect(call('find_user_id_by_name_zip', { first_name: 'omar', last_name: 'ANDERSON', zip: '19031' })).toBe('omar_anderson_3203');
      fails('find_user_id_by_name_zip', { first_name: 'Omar', last_name: 'Anderson', zip: '19032' }, 'user not found');
    });

    it('get_user_details returns the record', () => {
      expect(call('get_user_details', { user_id: 'omar_kim_3528' })).toEqual(before.users.omar_kim_3528);
      fails('get_user_details', { user_id: 'omar_kim' }, 'user not found');
      fails('get_user_details', { user_id: 'constructor' }, 'user not found');
    });

    it('modify_user_address replaces the address with the six fields in order', () => {
      const address = { address1: '1 Main St', address2: 'Apt 2', city: 'Austin', state: 'TX', country: 'USA', zip: '78701' };
      const user = call('modify_user_address', { user_id: 'omar_kim_3528', ...address });
      expect(Object.keys(user.address)).toEqual(['address1', 'address2', 'city', 'state', 'country', 'zip']);
      expect(world.users.omar_kim_3528).toEqual({ ...before.users.omar_kim_3528, address });
      fails('modify_user_address', { user_id: 'nobody_1', ...address }, 'user not found');
    });
  });

  describe('read tools', () => {
    it('get_order_details returns the record', () => {
      expect(call('get_order_details', { order_id: '#W2611340' })).toEqual(before.orders['#W2611340']);
      fails('get_order_details', { order_id: 'W2611340' }, 'order not found');
    });

    it('get_product_details returns the record', () => {
      expect(call('get_product_details', { product_id: '9523456873' }).name).toBe('T-Shirt');
      fails('get_product_details', { product_id: '9612497925' }, 'product not found'); // an item id, not a product id
    });

    it('list_all_product_types maps every name to its product id, names sorted (it takes no input and cannot fail)', () => {
      const types = call('list_all_product_types', {}) as Record<string, string>;
      expect(Object.keys(types)).toHaveLength(50);
      expect(Object.keys(types)).toEqual(Object.keys(types).sort());
      expect(types['T-Shirt']).toBe('9523456873');
    });

    it('calculate returns the text of the rounded float', () => {
      expect(call('calculate', { expression: '155.33 - 147.05' })).toBe('8.28');
      fails('calculate', { expression: 'import os' }, 'invalid characters in expression');
    });

    it('think and transfer_to_human_agents change nothing (and cannot fail)', () => {
      expect(call('think', { thought: 'hmm' })).toBe('');
      expect(call('transfer_to_human_agents', { summary: 'wants a human' })).toBe('Transfer successful');
      expect(world).toEqual(before);
    });
  });

  describe('cancel_pending_order', () => {
    it('refunds every payment, crediting a gift card at once, and records the reason', () => {
      const order = call('cancel_pending_order', { order_id: '#W8955613', reason: 'no longer needed' });
      expect(order.status).toBe('cancelled');
      expect(order.cancel_reason).toBe('no longer needed');
      expect(order.payment_history).toEqual([
        { transaction_type: 'payment', amount: 585.97, payment_method_id: 'gift_card_6682391' },
        { transaction_type: 'refund', amount: 585.97, payment_method_id: 'gift_card_6682391' },
      ]);
      expect(world.users.olivia_lopez_9494!.payment_methods.gift_card_6682391!.balance).toBe(620.97); // 35 + 585.97, rounded
      expect(world.orders['#W8955613']).toEqual(order);
    });

    it('fails, in order: unknown order, non-pending order, invalid reason', () => {
      fails('cancel_pending_order', { order_id: '#W0000000', reason: 'no longer needed' }, 'order not found');
      fails('cancel_pending_order', { order_id: '#W2611340', reason: 'oops' }, 'non-pending order cannot be cancelled');
      fails('cancel_pending_order', { order_id: '#W8955613', reason: 'too expensive' }, 'invalid reason');
    });
  });

  describe('modify_pending_order_address', () => {
    const address = { address1: '1 Main St', address2: '', city: 'Austin', state: 'TX', country: 'USA', zip: '78701' };

    it("replaces the order's address", () => {
      const order = call('modify_pending_order_address', { order_id: '#W8955613', ...address });
      expect(order.address).toEqual(address);
      expect(Object.keys(order.address)).toEqual(['address1', 'address2', 'city', 'state', 'country', 'zip']);
      expect(order.status).toBe('pending');
    });

    it('fails on a non-pending order', () => {
      fails('modify_pending_order_address', { order_id: '#W2611340', ...address }, 'non-pending order cannot be modified');
      fails('modify_pending_order_address', { order_id: '#W1', ...address }, 'order not found');
    });
  });

  describe('modify_pending_order_payment', () => {
    it('pays with the new method and refunds the old one, moving gift card balances', () => {
      const order = call('modify_pending_order_payment', { order_id: '#W1080318', payment_method_id: 'gift_card_3749819' });
      expect(order.payment_history).toEqual([
        { transaction_type: 'payment', amount: 53.43, payment_method_id: 'credit_card_3577130' },
        { transaction_type: 'payment', amount: 53.43, payment_method_id: 'gift_card_3749819' },
        { transaction_type: 'refund', amount: 53.43, payment_method_id: 'credit_card_3577130' },
      ]);
      expect(world.users.omar_kim_3528!.payment_methods.gift_card_3749819!.balance).toBe(37.57); // 91 - 53.43, rounded
      expect(order.status).toBe('pending');
      // Now there are two payments: a second change is refused.
      fails(
        'modify_pending_order_payment',
        { order_id: '#W1080318', payment_method_id: 'credit_card_3577130' },
        'there should be exactly one payment for a pending order',
      );
    });

    it('fails on an unknown method, the same method, or a gift card that cannot pay', () => {
      fails('modify_pending_order_payment', { order_id: '#W2611340', payment_method_id: 'gift_card_1725971' }, 'non-pending order cannot be modified');
      fails('modify_pending_order_payment', { order_id: '#W1080318', payment_method_id: 'paypal_1' }, 'payment method not found');
      fails(
        'modify_pending_order_payment',
        { order_id: '#W1080318', payment_method_id: 'credit_card_3577130' },
        'the new payment method should be different from the current one',
      );
      world.users.omar_kim_3528!.payment_methods.gift_card_3749819!.balance = 50;
      fails(
        'modify_pending_order_payment',
        { order_id: '#W1080318', payment_method_id: 'gift_card_3749819' },
        'insufficient gift card balance to pay for the order',
      );
    });
  });

  describe('modify_pending_order_items', () => {
    const base = { order_id: '#W8955613', payment_method_id: 'gift_card_6682391' };

    it('swaps items for variants of the same product and settles the difference unrounded', () => {
      const order = call('modify_pending_order_items', { ...base, item_ids: ['2554056026'], new_item_ids: ['2860956907'] });
      const difference = 315.61 - 367.38;
      expect(order.status).toBe('pending (item modified)');
      expect(order.items[0]).toEqual({
        name: 'Smart Watch',
        product_id: '6945232052',
        item_id: '2860956907',
        price: 315.61,
        options: { color: 'black', 'band material': 'silicone', display: 'LCD' },
      });
      expect(order.payment_history.at(-1)).toEqual({
        transaction_type: 'refund',
        amount: Math.abs(difference),
        payment_method_id: 'gift_card_6682391',
      });
      expect(world.users.olivia_lopez_9494!.payment_methods.gift_card_6682391!.balance).toBe(pyRound2(35 - difference));
    });

    it('fails, in order: items not in the order, unequal lists, unavailable variant, unknown method, short gift card', () => {
      fails('modify_pending_order_items', { ...base, item_ids: ['1111111111'], new_item_ids: ['2860956907'] }, '1111111111 not found');
      fails(
        'modify_pending_order_items',
        { ...base, item_ids: ['2554056026', '2554056026'], new_item_ids: ['2860956907', '5694328282'] },
        '2554056026 not found',
      );
      fails(
        'modify_pending_order_items',
        { ...base, item_ids: ['2554056026'], new_item_ids: ['2860956907', '5694328282'] },
        'the number of items to be exchanged should match',
      );
      fails('modify_pending_order_items', { ...base, item_ids: ['2554056026'], new_item_ids: ['4920090458'] }, 'new item 4920090458 not found or available');
      fails('modify_pending_order_items', { ...base, item_ids: ['2554056026'], new_item_ids: ['6309044598'] }, 'new item 6309044598 not found or available');
      fails(
        'modify_pending_order_items',
        { ...base, item_ids: ['2554056026'], new_item_ids: ['2860956907'], payment_method_id: 'credit_card_1' },
        'payment method not found',
      );
      world.users.olivia_lopez_9494!.payment_methods.gift_card_6682391!.balance = 10;
      fails(
        'modify_pending_order_items',
        { ...base, item_ids: ['2554056026'], new_item_ids: ['1007724142'] }, // +15.03
        'insufficient gift card balance to pay for the new item',
      );
      fails('modify_pending_order_items', { ...base, order_id: '#W2611340', item_ids: [], new_item_ids: [] }, 'non-pending order cannot be modified');
    });
  });

  describe('exchange_delivered_order_items', () => {
    const base = { order_id: '#W9250394', payment_method_id: 'gift_card_4817478' };

    it('records the exchange request with sorted ids and the rounded difference, paying nothing yet', () => {
      const order = call('exchange_delivered_order_items', {
        ...base,
        item_ids: ['7159180318', '2681513500'],
        new_item_ids: ['3877338112', '5694328282'],
      });
      expect(order.status).toBe('exchange requested');
      expect(order.exchange_items).toEqual(['2681513500', '7159180318']);
      expect(order.exchange_new_items).toEqual(['3877338112', '5694328282']);
      expect(order.exchange_payment_method_id).toBe('gift_card_4817478');
      expect(order.exchange_price_difference).toBe(pyRound2(545.68 - 512.88 + (323.19 - 356.23)));
      expect(order.items).toEqual(before.orders['#W9250394']!.items);
      expect(order.payment_history).toEqual(before.orders['#W9250394']!.payment_history);
      expect(world.users).toEqual(before.users);
    });

    it('fails on a non-delivered order, bad items, an unknown method or a short gift card', () => {
      const swap = { item_ids: ['7159180318'], new_item_ids: ['3877338112'] };
      fails('exchange_delivered_order_items', { ...base, ...swap, order_id: '#W8955613' }, 'non-delivered order cannot be exchanged');
      fails('exchange_delivered_order_items', { ...base, item_ids: ['2554056026'], new_item_ids: ['3877338112'] }, '2554056026 not found');
      fails('exchange_delivered_order_items', { ...base, item_ids: ['7159180318'], new_item_ids: ['8140269513'] }, 'new item 8140269513 not found or available');
      fails('exchange_delivered_order_items', { ...base, ...swap, payment_method_id: 'gift_card_1' }, 'payment method not found');
      fails(
        'exchange_delivered_order_items',
        { ...base, item_ids: ['7159180318', '2681513500'], new_item_ids: ['3877338112', '1007724142'] }, // +32.80 +26.18 > 53
        'insufficient gift card balance to pay for the price difference',
      );
    });
  });

  describe('return_delivered_order_items', () => {
    it('records the return request with sorted ids, to the original method or a gift card', () => {
      const order = call('return_delivered_order_items', {
        order_id: '#W9250394',
        item_ids: ['7159180318', '2407258246'],
        payment_method_id: 'paypal_3574041',
      });
      expect(order.status).toBe('return requested');
      expect(order.return_items).toEqual(['2407258246', '7159180318']);
      expect(order.return_payment_method_id).toBe('paypal_3574041');
      expect(order.payment_history).toEqual(before.orders['#W9250394']!.payment_history);
    });

    it('fails, in order: non-delivered order, unknown method, a method that is neither original nor gift card, items', () => {
      fails('return_delivered_order_items', { order_id: '#W8955613', item_ids: ['2554056026'], payment_method_id: 'gift_card_6682391' }, 'non-delivered order cannot be returned');
      fails('return_delivered_order_items', { order_id: '#W9250394', item_ids: ['0'], payment_method_id: 'credit_card_1' }, 'payment method not found');
      fails(
        'return_delivered_order_items',
        { order_id: '#W9077205', item_ids: ['9370300555'], payment_method_id: 'paypal_4101143' },
        'payment method should be either the original payment method or a gift card',
      );
      fails(
        'return_delivered_order_items',
        { order_id: '#W9250394', item_ids: ['7159180318', '7159180318'], payment_method_id: 'gift_card_4817478' },
        'some item not found',
      );
    });
  });
});
