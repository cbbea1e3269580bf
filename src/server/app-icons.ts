/**
 * The installable console's icons (S7): the favicon's sail and hull (console-assets.ts), drawn in
 * code into PNGs of any size — full-bleed blue, the shapes inside the middle 80% (the safe zone of a
 * maskable icon, so a launcher may cut it to a circle or a squircle). No image file ships.
 */
import { deflateSync } from 'node:zlib';
import { ICON_BLUE, ICON_SHAPES, inside } from './console-assets.js';

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

/** The icon as a `size`×`size` PNG (made once a size, 2×2 samples a pixel). */
export function iconPng(size: number): Buffer {
  const had = made.get(size);
  if (had) return had;
  const rgb = new Uint8Array(size * size * 3);
  const unit = 32 / size;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      let white = 0;
      for (let s = 0; s < 4; s++) {
        // The sample's place on the 32-unit grid, zoomed out about the centre to the safe zone.
        const gx = 16 + ((x + ((s & 1) + 0.5) / 2) * unit - 16) / SAFE;
        const gy = 16 + ((y + ((s >> 1) + 0.5) / 2) * unit - 16) / SAFE;
        if (ICON_SHAPES.some((p) => inside(p, gx, gy))) white++;
      }
      const w = white / 4;
      for (let ch = 0; ch < 3; ch++) rgb[(y * size + x) * 3 + ch] = Math.round(ICON_BLUE[ch] * (1 - w) + 255 * w);
    }
  }
  const png = encodePng(size, size, rgb);
  made.set(size, png);
  return png;
}
