/**
 * A minimal FLAC encoder for tests, written from the format specification (RFC 9639):
 * one STREAMINFO block, then fixed-size frames whose subframes are VERBATIM (raw 16-bit
 * samples). Valid FLAC that any decoder must read, with sample values known exactly.
 */

class BitWriter {
  private readonly bytes: number[] = [];
  private current = 0;
  private used = 0;

  write(value: number, bits: number): void {
    for (let i = bits - 1; i >= 0; i--) {
      this.current = (this.current << 1) | (Math.floor(value / 2 ** i) & 1);
      if (++this.used === 8) {
        this.bytes.push(this.current);
        this.current = 0;
        this.used = 0;
      }
    }
  }

  toBytes(): number[] {
    if (this.used !== 0) throw new Error('not byte-aligned');
    return this.bytes;
  }
}

function crc8(bytes: readonly number[]): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let i = 0; i < 8; i++) crc = crc & 0x80 ? ((crc << 1) ^ 0x07) & 0xff : (crc << 1) & 0xff;
  }
  return crc;
}

function crc16(bytes: readonly number[]): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x8005) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** 16-bit FLAC of `channels` (equal lengths) at `sampleRate` (< 65536 Hz), `blockSize` samples per frame. */
export function verbatimFlac(channels: Int16Array[], sampleRate: number, blockSize = 1024): Uint8Array {
  if (sampleRate >= 65536) throw new Error('test writer encodes sample rates below 65536 Hz only');
  const total = channels[0].length;
  const info = new BitWriter();
  info.write(blockSize, 16); // min block size
  info.write(blockSize, 16); // max block size
  info.write(0, 24); // min frame size: unknown
  info.write(0, 24); // max frame size: unknown
  info.write(sampleRate, 20);
  info.write(channels.length - 1, 3);
  info.write(16 - 1, 5);
  info.write(total, 36);
  for (let i = 0; i < 16; i++) info.write(0, 8); // MD5 unknown
  const out: number[] = [...'fLaC'].map((c) => c.charCodeAt(0));
  out.push(0x80, 0, 0, 34, ...info.toBytes()); // last metadata block, type STREAMINFO, length 34

  for (let frame = 0, start = 0; start < total; frame++, start += blockSize) {
    const size = Math.min(blockSize, total - start);
    if (frame > 127) throw new Error('test writer encodes frame numbers < 128 only');
    const header = new BitWriter();
    header.write(0b11111111111110, 14); // sync
    header.write(0, 1); // reserved
    header.write(0, 1); // fixed block size
    header.write(0b0111, 4); // block size: 16-bit (size - 1) follows
    header.write(0b1101, 4); // sample rate: 16-bit value in Hz follows
    header.write(channels.length - 1, 4); // independent channels
    header.write(0b100, 3); // 16 bits per sample
    header.write(0, 1); // reserved
    header.write(frame, 8); // frame number, UTF-8 coded (one byte below 128)
    header.write(size - 1, 16);
    header.write(sampleRate, 16);
    const frameBytes = header.toBytes();
    frameBytes.push(crc8(frameBytes));
    const body = new BitWriter();
    for (const channel of channels) {
      body.write(0, 1); // padding
      body.write(0b000001, 6); // VERBATIM
      body.write(0, 1); // no wasted bits
      for (let i = 0; i < size; i++) body.write(channel[start + i] & 0xffff, 16);
    }
    frameBytes.push(...body.toBytes());
    const crc = crc16(frameBytes);
    frameBytes.push(crc >> 8, crc & 0xff);
    out.push(...frameBytes);
  }
  return new Uint8Array(out);
}
