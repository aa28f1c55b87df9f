/** Types of inflate-raw.mjs (plain JavaScript, so the inflate worker loads it without a TypeScript loader). */

export type Crc32 = (data: Uint8Array, initial?: number) => number;
export declare const crc32: Crc32;
export declare const crc32Table: Crc32;
export declare const hasNativeCrc32: boolean;

/** Raw inflate of one entry's data, its output capped at the declared size plus one byte. */
export type Inflate = (
  compressed: Buffer,
  declaredSize: number,
) => { data: Buffer; unread: number } | { failure: "too_large" | { corrupt: string } };

export declare const inflateOneShot: Inflate;
export declare const SMALL_ENTRY_BYTES: number;
export declare function reusedInflater():
  | ((
      compressed: Buffer,
      declaredSize: number,
      scratch?: Buffer,
    ) => { data: Buffer; unread: number } | { failure: "too_large" | { corrupt: string } })
  | null;

/** What inflating one entry gave: data, input left unread and CRC-32 (0 when the size is already wrong), or why not. */
export type InflateFacts =
  | { data: Buffer; unread: number; crc: number }
  | { failure: "too_large" | { corrupt: string } };

export declare function inflateFacts(compressed: Buffer, method: number, declaredSize: number): InflateFacts;
/** inflateFacts, but a small deflated entry's data lies in a buffer reused by the next call. */
export declare function inflateFactsBorrowed(
  compressed: Buffer,
  method: number,
  declaredSize: number,
): InflateFacts;
export declare function sha256Hex(data: Uint8Array): string;
export declare function sniffWindow(data: Buffer): Buffer;
export declare function tailAware(head: Buffer, tail: Buffer, length: number): Buffer;
