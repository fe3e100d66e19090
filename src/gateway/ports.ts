/**
 * The ports of the gateways running in this process: the only ports a sandbox's relay may have the
 * host connect to (see src/sandbox/relay.ts). A file of its own so that the sandbox loads nothing
 * of the gateway.
 */
const live = new Set<number>();

export function addGatewayPort(port: number): void {
  live.add(port);
}

export function removeGatewayPort(port: number): void {
  live.delete(port);
}

/** Whether `port` is the port of a gateway of this process. */
export function isGatewayPort(port: number): boolean {
  return live.has(port);
}
