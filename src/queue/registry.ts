/**
 * The evals workers serve: a Redis sorted set of evalIds scored by their coordinator's last
 * heartbeat (Redis's clock, so machines need not agree on the time). A coordinator announces its
 * eval and keeps it alive; it withdraws it when the eval ends or is cancelled, which tells the
 * workers to stop the eval's running rollouts. A coordinator that died leaves its eval listed, so
 * workers go on with its jobs and `--resume` finds their results.
 */
import type { Redis } from 'ioredis';
import { QUEUE_STALE_EVAL_MS } from '../options.js';
import { REGISTRY_KEY } from './job.js';

/** Redis's clock, ms. */
async function redisNow(client: Redis): Promise<number> {
  const [seconds, micros] = await client.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** Lists the eval (again): workers start serving it. */
export async function announceEval(client: Redis, evalId: string): Promise<void> {
  await client.zadd(REGISTRY_KEY, await redisNow(client), evalId);
}

/** Unlists the eval: workers stop it and leave its queue. */
export async function withdrawEval(client: Redis, evalId: string): Promise<void> {
  await client.zrem(REGISTRY_KEY, evalId);
}

/** The evals to serve; evals whose coordinator is long gone are dropped from the list. */
export async function listedEvals(client: Redis): Promise<string[]> {
  const cutoff = (await redisNow(client)) - QUEUE_STALE_EVAL_MS;
  await client.zremrangebyscore(REGISTRY_KEY, '-inf', `(${cutoff}`);
  return client.zrange(REGISTRY_KEY, 0, -1);
}
