//===- SignatureTest.cpp - The model signature parser on hostile text ----===//
//
// kiln_rt_parse_signature (lib/Runtime/Model/Signature.c) reads the text a
// model.so embeds; a damaged or hostile model must get a status, never a
// write past the arrays the first pass sizes. Linked with the model runtime
// archive itself (the parser is hidden in model.so).
//
//===----------------------------------------------------------------------===//

#include "../../lib/Runtime/Model/ModelRuntime.h"
#include "kiln/Runtime/ModelAPI.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

/// A parsed signature: the model (its metadata freed with it) and the
/// status message, "" on success.
struct Parsed {
  kiln_model_impl *model;
  std::string error;

  explicit Parsed(const std::string &text)
      : model(static_cast<kiln_model_impl *>(calloc(1, sizeof(*model)))) {
    kiln_status_t *status = kiln_rt_parse_signature(model, text.c_str());
    if (status) {
      error = status->message;
      if (!status->is_static)
        free(status);
    }
  }
  ~Parsed() {
    for (kiln_meta_block *block = model->meta; block;) {
      kiln_meta_block *next = block->next;
      free(block);
      block = next;
    }
    free(model);
  }
};

TEST(SignatureTest, Valid) {
  Parsed p("kiln-signature 1\narena 64\ninput x f32 2 ?n 4\n"
           "output y f32 2 ?n 4\n");
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.model->num_inputs, 1u);
  EXPECT_EQ(p.model->num_outputs, 1u);
  EXPECT_STREQ(p.model->inputs[0].name, "x");
  EXPECT_EQ(p.model->inputs[0].dims[0], -1);
  EXPECT_STREQ(p.model->inputs[0].dim_symbols[0], "n");
  EXPECT_EQ(p.model->outputs[0].dims[1], 4);
}

// `graph-capturable` and `dependent-launch`: flags without fields.
TEST(SignatureTest, FlagRecords) {
  Parsed plain("kiln-signature 1\ngraph-capturable\n");
  ASSERT_EQ(plain.error, "");
  EXPECT_EQ(plain.model->graph_capturable, 1);
  EXPECT_EQ(plain.model->dependent_launch, 0);
  Parsed dependent("kiln-signature 1\ngraph-capturable\ndependent-launch\n");
  ASSERT_EQ(dependent.error, "");
  EXPECT_EQ(dependent.model->dependent_launch, 1);
}

// Records separated from their fields by a TAB or CR, or indented: both
// passes tokenize alike, so each is counted where it is parsed (the first
// pass once matched "input " literally and sized the arrays too small).
TEST(SignatureTest, WhitespaceAfterKind) {
  Parsed p("kiln-signature 1\ninput\tx f32 1 2\n input y f32 0\n"
           "output\rz f32 1 2\n\toutput w i64 0\n");
  ASSERT_EQ(p.error, "");
  ASSERT_EQ(p.model->num_inputs, 2u);
  ASSERT_EQ(p.model->num_outputs, 2u);
  EXPECT_STREQ(p.model->inputs[1].name, "y");
  EXPECT_STREQ(p.model->outputs[0].name, "z");
  EXPECT_EQ(p.model->outputs[1].dtype, KILN_DTYPE_I64);
}

TEST(SignatureTest, WeightRecordsAfterTabs) {
  Parsed p("kiln-signature 1\nweights-file m.weights 0123456789abcdef 192\n"
           "weight\tw f32 1 16 64 64\n weight v f32 1 16 128 64\n");
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.model->num_ext_weights, 2u);
  EXPECT_EQ(p.model->ext_weights[1].offset, 128u);
}

TEST(SignatureTest, Malformed) {
  struct Case {
    const char *text, *message;
  } cases[] = {
      {"", "missing 'kiln-signature' header"},
      {"kiln-signature 2\n", "version 2 is not supported"},
      {"kiln-signature 1\ninput x f32 3 1 2\n",
       "line 2: number of dims differs from the rank"},
      {"kiln-signature 1\ninput x f99 0\n", "line 2: unknown dtype"},
      {"kiln-signature 1\ninput x%zz f32 0\n", "line 2: bad %XX escape"},
      {"kiln-signature 1\noutput y f32 1 99999999999999999999\n",
       "line 2: bad dim"},
      {"kiln-signature 1\ninput x f32 65\n", "line 2: bad rank"},
      {"kiln-signature 1\nweight w f32 1 16 0 64\n",
       "'weight' records without 'weights-file'"},
      {"kiln-signature 1\nweights-file m.weights 0123456789abcdef 64\n"
       "weight w f32 1 16 64 64\n",
       "lies outside the weights file"},
      {"kiln-signature 1\nweights-file ../m 0123456789abcdef 64\n",
       "must be a plain file name"},
      {"kiln-signature 1\nbogus\n", "line 2: unknown record"},
      {"kiln-signature 1\nlaunch 1 k\n", "line 2: launch sites out of order"},
      {"kiln-signature 1\nlaunch 0\n", "line 2: expected 'launch <site>"},
      {"kiln-signature 1\nlaunch x k\n", "line 2: expected 'launch <site>"},
      {"kiln-signature 1\nlaunch 0 k a b\n", "line 2: expected 'launch"},
      {"kiln-signature 1\nlaunch 0 k a,,b\n", "line 2: empty node name"},
      {"kiln-signature 1\nlaunch 0 k a,%g0\n", "line 2: bad %XX escape"},
      {"kiln-signature 1\ndependent-launch yes\n",
       "line 2: expected 'dependent-launch'"},
  };
  for (const Case &c : cases) {
    Parsed p(c.text);
    EXPECT_NE(p.error.find(c.message), std::string::npos)
        << "signature:\n"
        << c.text << "\nerror: " << p.error;
  }
}

// `launch` records (profiles): site i's kernel and nodes, %XX-decoded.
TEST(SignatureTest, LaunchRecords) {
  Parsed p("kiln-signature 1\nlaunch 0 k_0 conv%2C1,relu\n"
           "launch\t1 k%200\nlaunch 2 k_0 ,\n");
  EXPECT_EQ(p.error, "malformed model signature, line 4: empty node name");
  Parsed q("kiln-signature 1\nlaunch 0 k_0 conv%2C1,relu\n"
           "launch\t1 k%200\n");
  ASSERT_EQ(q.error, "");
  ASSERT_EQ(q.model->num_sites, 2u);
  EXPECT_STREQ(q.model->sites[0].kernel, "k_0");
  ASSERT_EQ(q.model->sites[0].num_nodes, 2u);
  EXPECT_STREQ(q.model->sites[0].nodes[0], "conv,1");
  EXPECT_STREQ(q.model->sites[0].nodes[1], "relu");
  EXPECT_STREQ(q.model->sites[1].kernel, "k 0");
  EXPECT_EQ(q.model->sites[1].num_nodes, 0u);
}

// Many records and symbols: the arrays are sized by the same count.
TEST(SignatureTest, ManyRecords) {
  std::string text = "kiln-signature 1\n";
  for (int i = 0; i < 500; ++i)
    text += (i % 3 ? "input\t" : " input ") + std::to_string(i) + " f32 2 ?s" +
            std::to_string(i) + " ?\n";
  Parsed p(text);
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.model->num_inputs, 500u);
  EXPECT_EQ(p.model->num_symbols, 500u);
}

} // namespace
