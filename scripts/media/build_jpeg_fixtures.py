#!/usr/bin/env python3
"""
JPEG fixtures written by Pillow and the pixels transformers' load_image gives for them
(PIL.Image.open, ImageOps.exif_transpose, convert("RGB")), into test/fixtures/media/jpeg/:

    /work/venvs/refs/bin/python scripts/media/build_jpeg_fixtures.py

Chroma subsampling 4:2:0, 4:2:2 and 4:4:4, progressive, grayscale, CMYK (Adobe, as Pillow
writes it), and EXIF orientations 3, 6 and 8, on odd-sized pictures with sharp colour edges
(where upsampling rules differ most). reference.json holds each file's size and the SHA-256 of
its RGB pixels; <name>.rgb the pixels themselves (width × height × 3 bytes).
"""
import hashlib
import io
import json
import os

import numpy as np
from PIL import Image, ImageOps, features

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'test', 'fixtures', 'media', 'jpeg')


def picture(width, height, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    image = np.zeros((height, width, 3), dtype=np.float64)
    image[..., 0] = 255 * (x / max(1, width - 1))
    image[..., 1] = 255 * (y / max(1, height - 1))
    image[..., 2] = 128 + 100 * np.sin(x / 3.0) * np.cos(y / 4.0)
    # Saturated blocks with hard edges: chroma upsampling shows there.
    for _ in range(6):
        x0, y0 = rng.integers(0, width - 4), rng.integers(0, height - 4)
        image[y0:y0 + rng.integers(3, 12), x0:x0 + rng.integers(3, 12)] = rng.choice([0, 255], size=3)
    image += rng.normal(0, 6, image.shape)
    return Image.fromarray(np.clip(image, 0, 255).astype(np.uint8), 'RGB')


def exif_with_orientation(orientation):
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()


CASES = {
    '420.jpg': dict(size=(45, 31), save=dict(quality=85, subsampling=2)),
    '422.jpg': dict(size=(37, 29), save=dict(quality=85, subsampling=1)),
    '444.jpg': dict(size=(33, 27), save=dict(quality=85, subsampling=0)),
    'progressive-420.jpg': dict(size=(47, 35), save=dict(quality=80, subsampling=2, progressive=True)),
    'gray.jpg': dict(size=(29, 23), mode='L', save=dict(quality=90)),
    'cmyk.jpg': dict(size=(31, 25), mode='CMYK', save=dict(quality=90)),
    'exif-3-420.jpg': dict(size=(41, 27), save=dict(quality=85, subsampling=2), orientation=3),
    'exif-6-420.jpg': dict(size=(41, 27), save=dict(quality=85, subsampling=2), orientation=6),
    'exif-8-422.jpg': dict(size=(39, 25), save=dict(quality=85, subsampling=1), orientation=8),
}


def load_image(data):
    # transformers.image_utils.load_image for a file or bytes.
    image = Image.open(io.BytesIO(data))
    image = ImageOps.exif_transpose(image)
    return image.convert('RGB')


def main():
    os.makedirs(OUT, exist_ok=True)
    reference = {'pillow': Image.__version__, 'libjpeg_turbo': features.version('libjpeg_turbo'), 'files': {}}
    for index, (name, case) in enumerate(CASES.items()):
        image = picture(*case['size'], seed=index)
        if case.get('mode'):
            image = image.convert(case['mode'])
        options = dict(case['save'])
        if case.get('orientation'):
            options['exif'] = exif_with_orientation(case['orientation'])
        buffer = io.BytesIO()
        image.save(buffer, 'JPEG', **options)
        data = buffer.getvalue()
        with open(os.path.join(OUT, name), 'wb') as f:
            f.write(data)
        pixels = load_image(data)
        raw = pixels.tobytes()
        with open(os.path.join(OUT, name[:-4] + '.rgb'), 'wb') as f:
            f.write(raw)
        reference['files'][name] = {'width': pixels.width, 'height': pixels.height, 'sha256': hashlib.sha256(raw).hexdigest(),
                                    'orientation': case.get('orientation', 1), 'mode': Image.open(io.BytesIO(data)).mode}
        print(name, pixels.size, reference['files'][name]['mode'])
    with open(os.path.join(OUT, 'reference.json'), 'w') as f:
        json.dump(reference, f, indent=1)
        f.write('\n')


if __name__ == '__main__':
    main()
