#!/usr/bin/env python3
"""
Which frames transformers' SmolVLM video processor samples, for SmolVLM2's settings, into
test/fixtures/transformers5/video/sampling.json:

    /work/venvs/refs/bin/python scripts/transformers5/build_video_sampling.py   (transformers 5)

The processor is SmolVLMVideoProcessor with SmolVLM2-256M-Video-Instruct's video_sampling
({"fps": 1, "max_frames": 64, "video_size": {"longest_edge": 512}}); "video_processor" is its
to_dict(), what transformers 5's processor save_pretrained nests in processor_config.json.
Each case is a video's metadata (frames, fps) and sample_frames' indices: the frames the
model sees (transformers' default, with no num_frames / fps passed at call time).
"""
import json
import os

import transformers
from transformers.models.smolvlm.video_processing_smolvlm import SmolVLMVideoProcessor
from transformers.video_utils import VideoMetadata

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, '..', '..', 'test', 'fixtures', 'transformers5', 'video')

# (total frames, fps): short clips, one under max_frames seconds, long ones past it (the
# one-second skip at each end applies), a fractional rate, fewer frames than seconds.
CASES = [(30, 10), (300, 10), (250, 25), (1800, 30), (2400, 24), (5000, 25), (300, 29.97), (4, 30), (160, 2)]


def main():
    processor = SmolVLMVideoProcessor(video_sampling={'fps': 1, 'max_frames': 64, 'video_size': {'longest_edge': 512}})
    cases = []
    for frames, fps in CASES:
        metadata = VideoMetadata(total_num_frames=frames, fps=fps, duration=frames / fps)
        cases.append({'total_frames': frames, 'fps': fps, 'indices': [int(i) for i in processor.sample_frames(metadata)]})
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, 'sampling.json'), 'w') as f:
        json.dump({'transformers': transformers.__version__, 'video_processor': processor.to_dict(), 'cases': cases}, f, indent=1)
        f.write('\n')


if __name__ == '__main__':
    main()
