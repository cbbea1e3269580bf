/**
 * The installable console's icons (S7): the favicon's sail and hull (console-assets.ts), drawn in
 * code into PNGs of any size — full-bleed blue, the shapes inside the middle 80% (the safe zone of a
 * maskable icon, so a launcher may cut it to a circle or a squircle). No image file ships.
 */
import { deflateSync } from 'node:zlib';
import { ICON_BLUE, ICON_SHAPES } from './assets.js';

/** The shapes' 32-unit grid, scaled by this about its centre: what a maskable icon keeps. */
const SAFE = 0.8;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** One PNG chunk: length, type, data, CRC of type and data. */
function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'ascii');
  out.set(data, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** An 8-bit RGB PNG of `rgb` (width × height × 3 bytes, rows top to bottom). */
export function encodePng(width: number, height: number, rgb: Uint8Array): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bits a channel
  header[9] = 2; // RGB
  const raw = Buffer.alloc(height * (1 + width * 3));
  for (let y = 0; y < height; y++) {
    raw[y * (1 + width * 3)] = 0; // no filter
    raw.set(rgb.subarray(y * width * 3, (y + 1) * width * 3), y * (1 + width * 3) + 1);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', new Uint8Array(0)),
  ]);
}

const made = new Map<number, Buffer>();

/** Where a horizontal line at `y` crosses a convex polygon: the [from, to] it covers, or undefined. */
function span(poly: [number, number][], y: number): [number, number] | undefined {
  let from = Number.POSITIVE_INFINITY;
  let to = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < poly.length; i++) {
    const [ax, ay] = poly[i];
    const [bx, by] = poly[(i + 1) % poly.length];
    if ((y < ay && y < by) || (y > ay && y > by)) continue;
    if (ay === by) {
      from = Math.min(from, ax, bx);
      to = Math.max(to, ax, bx);
      continue;
    }
    const x = ax + ((y - ay) / (by - ay)) * (bx - ax);
    from = Math.min(from, x);
    to = Math.max(to, x);
  }
  return from <= to ? [from, to] : undefined;
}

/**
 * The icon as a `size`×`size` PNG (made once a size, 2×2 samples a pixel). Each row of samples is
 * cut by each shape into one span (the shapes are convex), so a 512 px icon takes milliseconds.
 */
export function iconPng(size: number): Buffer {
  const had = made.get(size);
  if (had) return had;
  const rgb = new Uint8Array(size * size * 3);
  const unit = 32 / size;
  /** A sample's place on the 32-unit grid, zoomed out about the centre to the safe zone. */
  const grid = (px: number, sub: number) => 16 + ((px + (sub + 0.5) / 2) * unit - 16) / SAFE;
  const white = new Uint8Array(size);
  for (let y = 0; y < size; y++) {
    white.fill(0);
    for (let sy = 0; sy < 2; sy++) {
      const gy = grid(y, sy);
      for (const poly of ICON_SHAPES) {
        const cut = span(poly, gy);
        if (!cut) continue;
        for (let x = 0; x < size; x++) {
          for (let sx = 0; sx < 2; sx++) {
            const gx = grid(x, sx);
            if (gx >= cut[0] && gx <= cut[1]) white[x]++;
          }
        }
      }
    }
    for (let x = 0; x < size; x++) {
      const w = Math.min(white[x], 4) / 4;
      for (let ch = 0; ch < 3; ch++) rgb[(y * size + x) * 3 + ch] = Math.round(ICON_BLUE[ch] * (1 - w) + 255 * w);
    }
  }
  const png = encodePng(size, size, rgb);
  made.set(size, png);
  return png;
}
