"""A learned tokenizer, sentence splitter and multiword-token expander for raw
text, trained from a treebank's own running text, in the manner of UDPipe
(Straka & Straková 2017, "Tokenizing, POS tagging, lemmatizing and parsing UD
2.0 with UDPipe") and Stanza (Qi et al. 2020, "Stanza: A Python natural
language processing toolkit for many human languages"): each character of the
text is labelled as outside a token, inside one, or ending a token, a
multiword token or a sentence (:mod:`.data`), by a character BiLSTM
(:mod:`.model`, trained by :mod:`.train`); the words of a multiword token come
from a dictionary and suffix rules learned from the training file (:mod:`.mwt`).
"""
