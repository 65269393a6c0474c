"""Tiny images of odd sizes in every format whose header test/media/declared-size.test.ts
reads, written by Pillow, with the size Pillow itself reports for each file (sizes.json):
the independent reference for src/media/decode/declared-size.ts.

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install Pillow
    /tmp/venv/bin/python scripts/media/make_header_fixtures.py
"""
import json
import pathlib

from PIL import Image

OUT = pathlib.Path(__file__).resolve().parents[2] / "test" / "fixtures" / "media" / "headers"


def picture(width, height, mode="RGB"):
    image = Image.new(mode, (width, height))
    for x in range(width):
        for y in range(height):
            value = (x * 7 + y * 13) % 256
            image.putpixel((x, y), (value, 255 - value, (x * y) % 256) + ((128,) if mode == "RGBA" else ()))
    return image


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    exif = Image.Exif()
    exif[0x010E] = "an APP1 segment before the frame header"
    files = {
        "rgb.png": lambda p: picture(37, 23).save(p, "PNG"),
        "baseline.jpg": lambda p: picture(41, 19).save(p, "JPEG", quality=90, exif=exif.tobytes()),
        "progressive.jpg": lambda p: picture(43, 17).save(p, "JPEG", quality=90, progressive=True),
        "palette.gif": lambda p: picture(29, 17).convert("P").save(p, "GIF"),
        "bottom-up.bmp": lambda p: picture(13, 11).save(p, "BMP"),
        "lossy.webp": lambda p: picture(31, 15).save(p, "WEBP", quality=80),
        "lossless.webp": lambda p: picture(33, 21).save(p, "WEBP", lossless=True),
        "alpha.webp": lambda p: picture(35, 9, "RGBA").save(p, "WEBP", quality=80),
    }
    sizes = {}
    for name, write in files.items():
        path = OUT / name
        write(path)
        with Image.open(path) as image:
            sizes[name] = {"width": image.width, "height": image.height}
    (OUT / "sizes.json").write_text(json.dumps(sizes, indent=1) + "\n")


if __name__ == "__main__":
    main()
