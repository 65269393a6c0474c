import { describe, expect, it } from 'vitest';
import { chooseOnnxFile, externalDataFilesOf } from '../../src/engine/loading/model-variants.js';

const common = ['config.json', 'tokenizer.json', 'tokenizer_config.json'];
const choose = (files: string[], settings = {}) => chooseOnnxFile([...common, ...files], settings, 'the model folder');

describe('choosing the ONNX file of a model folder', () => {
  it('serves the only variant present without any setting', () => {
    expect(choose(['onnx/model_q4.onnx'])).toEqual({ file: 'onnx/model_q4.onnx', dtype: 'q4', externalDataFiles: [] });
    expect(choose(['onnx/decoder_model_merged_quantized.onnx']).dtype).toBe('quantized');
    expect(choose(['model.onnx']).file).toBe('model.onnx');
  });

  it('takes fp32 when several variants are present and no dtype is set', () => {
    expect(choose(['onnx/model_fp16.onnx', 'onnx/model.onnx', 'onnx/model_q4.onnx'])).toMatchObject({ file: 'onnx/model.onnx', dtype: 'fp32' });
  });

  it("takes the in-place KV twin of onnx/model.onnx where the home asks for it, also for dtype fp32, unless another dtype or modelFile says otherwise", () => {
    const folder = ['onnx/model.onnx', 'onnx/model.inplace.onnx', 'onnx/model_q4.onnx'];
    expect(choose(folder, { preferInPlaceKv: true })).toMatchObject({ file: 'onnx/model.inplace.onnx', dtype: 'fp32' });
    expect(choose(folder)).toMatchObject({ file: 'onnx/model.onnx', dtype: 'fp32' });
    // MODEL_DTYPE=fp32 asks for the weights, not for the slower cache wiring.
    expect(choose(folder, { preferInPlaceKv: true, dtype: 'fp32' })).toMatchObject({ file: 'onnx/model.inplace.onnx', dtype: 'fp32' });
    expect(choose(folder, { dtype: 'fp32' }).file).toBe('onnx/model.onnx');
    expect(choose(folder, { preferInPlaceKv: true, dtype: 'q4' }).file).toBe('onnx/model_q4.onnx');
    expect(choose(folder, { preferInPlaceKv: true, modelFile: 'onnx/model.onnx' }).file).toBe('onnx/model.onnx');
    // A twin without the graph it twins is no model of its own.
    expect(choose(['onnx/model.inplace.onnx', 'onnx/model_q4.onnx'], { preferInPlaceKv: true }).file).toBe('onnx/model_q4.onnx');
  });

  it("takes each variant's own in-place twin: q4's weights stay q4's", () => {
    const folder = ['onnx/model.onnx', 'onnx/model.inplace.onnx', 'onnx/model_q4.onnx', 'onnx/model_q4.inplace.onnx', 'onnx/model_q4.inplace.onnx_data'];
    expect(choose(folder, { preferInPlaceKv: true, dtype: 'q4' })).toEqual({
      file: 'onnx/model_q4.inplace.onnx',
      dtype: 'q4',
      externalDataFiles: ['onnx/model_q4.inplace.onnx_data'],
    });
    expect(choose(folder, { dtype: 'q4' }).file).toBe('onnx/model_q4.onnx');
    expect(choose(folder, { preferInPlaceKv: true })).toMatchObject({ file: 'onnx/model.inplace.onnx', dtype: 'fp32' });
    // The only variant of a folder, with its twin.
    expect(choose(['onnx/model_q4.onnx', 'onnx/model_q4.inplace.onnx'], { preferInPlaceKv: true })).toMatchObject({ file: 'onnx/model_q4.inplace.onnx', dtype: 'q4' });
    // fp16 has no twin here: its own graph, not another variant's twin.
    expect(choose([...folder, 'onnx/model_fp16.onnx'], { preferInPlaceKv: true, dtype: 'fp16' }).file).toBe('onnx/model_fp16.onnx');
    expect(choose(folder, { preferInPlaceKv: true, modelFile: 'onnx/model_q4.onnx' }).file).toBe('onnx/model_q4.onnx');
  });

  it('maps each transformers.js dtype to its file name', () => {
    const all = ['', '_fp16', '_q4', '_q4f16', '_int8', '_uint8', '_quantized', '_bnb4'].map((s) => `onnx/model${s}.onnx`);
    const names = { fp32: '', fp16: '_fp16', q4: '_q4', q4f16: '_q4f16', int8: '_int8', uint8: '_uint8', quantized: '_quantized', bnb4: '_bnb4' };
    for (const [dtype, suffix] of Object.entries(names)) {
      expect(choose(all, { dtype }).file).toBe(`onnx/model${suffix}.onnx`);
    }
  });

  it('prefers onnx/model*.onnx over the legacy merged decoder of the same dtype', () => {
    expect(choose(['onnx/decoder_model_merged.onnx', 'onnx/model.onnx']).file).toBe('onnx/model.onnx');
    expect(choose(['onnx/decoder_model_merged_fp16.onnx'], { dtype: 'fp16' }).file).toBe('onnx/decoder_model_merged_fp16.onnx');
  });

  it('refuses several variants without fp32 and lists them', () => {
    expect(() => choose(['onnx/model_q4.onnx', 'onnx/model_fp16.onnx', 'onnx/model_q4f16.onnx'])).toThrow(
      'the model folder holds several model variants and no fp32 one: fp16 (onnx/model_fp16.onnx), q4 (onnx/model_q4.onnx), ' +
        'q4f16 (onnx/model_q4f16.onnx). Choose one with the "dtype" setting (MODEL_DTYPE), e.g. dtype "fp16", or name a file with "modelFile".',
    );
  });

  it('refuses a dtype the folder does not have and names the variants it has', () => {
    expect(() => choose(['onnx/model_q4.onnx', 'onnx/model_fp16.onnx'], { dtype: 'int8' })).toThrow(
      'dtype "int8" asks for onnx/model_int8.onnx or onnx/decoder_model_merged_int8.onnx, which the model folder does not have; ' +
        'variants present: fp16 (onnx/model_fp16.onnx), q4 (onnx/model_q4.onnx). Set dtype (MODEL_DTYPE) to one of them.',
    );
  });

  it('refuses a folder without a decoder, naming the .onnx files it does hold', () => {
    expect(() => choose([])).toThrow(/holds no ONNX decoder: expected onnx\/model\.onnx or a variant onnx\/model_\{fp16,q4,q4f16,int8,uint8,quantized,bnb4\}\.onnx/);
    expect(() => choose(['onnx/encoder_model.onnx'])).toThrow(/found onnx\/encoder_model\.onnx: name one with the "modelFile" setting/);
  });

  it('loads any file named by modelFile, which wins over dtype', () => {
    expect(choose(['onnx/model.onnx', 'onnx/custom.onnx'], { modelFile: 'onnx/custom.onnx', dtype: 'fp32' })).toEqual({
      file: 'onnx/custom.onnx',
      dtype: null,
      externalDataFiles: [],
    });
    expect(choose(['onnx/model_q4.onnx'], { modelFile: './onnx/model_q4.onnx' }).dtype).toBe('q4');
  });

  it('refuses a modelFile that is missing or not an .onnx file', () => {
    expect(() => choose(['onnx/model.onnx'], { modelFile: 'onnx/other.onnx' })).toThrow(
      'modelFile "onnx/other.onnx" is not in the model folder; its .onnx files: onnx/model.onnx.',
    );
    expect(() => choose(['onnx/model.onnx'], { modelFile: 'config.json' })).toThrow('modelFile "config.json" must name an .onnx file.');
  });

  it('finds external data beside the graph, one file or several, in order', () => {
    const files = ['onnx/model.onnx', 'onnx/model.onnx_data', 'onnx/model_q4.onnx', 'onnx/model_q4.onnx_data', 'onnx/model_q4.onnx_data_2', 'onnx/model_q4.onnx_data_1'];
    expect(choose(files).externalDataFiles).toEqual(['onnx/model.onnx_data']);
    expect(choose(files, { dtype: 'q4' }).externalDataFiles).toEqual(['onnx/model_q4.onnx_data', 'onnx/model_q4.onnx_data_1', 'onnx/model_q4.onnx_data_2']);
    expect(externalDataFilesOf('onnx/model.onnx', ['onnx/model.onnx.data', 'onnx/model_fp16.onnx_data'])).toEqual(['onnx/model.onnx.data']);
  });
});
