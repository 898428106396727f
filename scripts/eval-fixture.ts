/**
 * Generates the retrieval evaluation set (G9) in test/fixtures/eval/: entities.json and queries.json.
 * Deterministic: the same run always writes the same files.
 *
 *   node --import tsx scripts/eval-fixture.ts
 *
 * 40 task families × 13 entities. Each entity gets a name, a summary built from one of its family's
 * sentence patterns around one of the family's specialisations, tags and skills drawn from the
 * family's pools, so entities of one family do not share every word. Queries are written by hand,
 * four per family (keyword, natural, two paraphrases). Grading: an entity of the query's family
 * whose specialisation is the query's focus is 3; any other entity of the family is 2 when the
 * query has a focus and 3 when it has none; entities of the families listed as related are 1.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { seededRandom } from './lib/random.js'

type Kind = 'keyword' | 'natural' | 'paraphrase'
interface Family {
  key: string
  cat: string
  names: string[]
  sums: string[]
  specs: string[]
  tags: string[]
  skills: string[]
  rel: string[]
  service?: boolean
  q: [Kind, string, string?][]
}

const F: Family[] = [
  {
    key: 'translation',
    cat: 'language',
    names: ['Lingo', 'Polyglot', 'Babel', 'Rosetta', 'Tongues'],
    specs: ['documents', 'websites', 'legal contracts', 'chat messages', 'subtitles', 'product listings'],
    sums: [
      'Translates {s} between more than 40 languages.',
      'Machine translation agent for {s} with custom glossary support.',
      'Converts {s} from one language into another while keeping the original formatting.',
      'Neural translator that localizes {s} for international audiences.',
      'Renders {s} into Spanish, French, German, Japanese and dozens of other languages.'
    ],
    tags: ['translation', 'localization', 'multilingual', 'i18n', 'languages'],
    skills: ['translate', 'detect-language', 'localize', 'glossary'],
    rel: ['language-tutoring'],
    q: [
      ['keyword', 'translation api'],
      ['natural', 'I need an agent that can translate legal contracts into English', 'legal contracts'],
      ['paraphrase', 'make my French letter readable in German'],
      ['paraphrase', 'show our shop items to buyers abroad in their own tongue', 'product listings']
    ]
  },
  {
    key: 'summarisation',
    cat: 'productivity',
    names: ['Digest', 'Brief', 'TLDR', 'Condense', 'Gist'],
    specs: ['news articles', 'research papers', 'long reports', 'email threads', 'books', 'web pages'],
    sums: [
      'Summarizes {s} into short bullet points.',
      'Produces concise summaries of {s} at adjustable length.',
      'Abstractive summarization agent for {s}.',
      'Condenses {s} into an executive summary.',
      'Extracts the key points of {s} and writes a short abstract.'
    ],
    tags: ['summarization', 'summary', 'nlp', 'tldr', 'abstract'],
    skills: ['summarize', 'extract-key-points', 'abstract'],
    rel: ['meeting-notes', 'pdf-qa'],
    q: [
      ['keyword', 'summarize research papers', 'research papers'],
      ['natural', 'which agent can give me a short summary of long reports', 'long reports'],
      ['paraphrase', 'boil down this lengthy scientific article to a few lines', 'research papers'],
      ['paraphrase', "too long, didn't read: shorten a novel for me", 'books']
    ]
  },
  {
    key: 'code-review',
    cat: 'developer-tools',
    names: ['Reviewer', 'LintLord', 'PR Pal', 'CodeCritic', 'Diffy'],
    specs: ['pull requests', 'Python code', 'TypeScript projects', 'Go services', 'Java codebases'],
    sums: [
      'Reviews {s} and leaves inline comments on bugs and style.',
      'Automated code review for {s} with suggestions for fixes.',
      'Checks {s} for code smells, complexity and risky changes.',
      'AI reviewer that comments on {s} like a senior engineer.',
      'Static analysis and review agent for {s}.'
    ],
    tags: ['code-review', 'developer', 'static-analysis', 'pull-request', 'linting'],
    skills: ['review-code', 'suggest-fix', 'lint', 'comment-on-diff'],
    rel: ['unit-test-generation', 'security-scanning', 'documentation'],
    q: [
      ['keyword', 'code review bot'],
      ['natural', 'an agent that reviews my GitHub pull requests automatically', 'pull requests'],
      ['paraphrase', 'someone to critique my diff before I merge it', 'pull requests'],
      ['paraphrase', 'spot mistakes in my Go changes before teammates look', 'Go services']
    ]
  },
  {
    key: 'sql-generation',
    cat: 'data',
    names: ['SQLSmith', 'QueryCraft', 'Text2SQL', 'TableTalk', 'DataAsk'],
    specs: ['PostgreSQL', 'MySQL', 'BigQuery', 'Snowflake', 'SQLite'],
    sums: [
      'Turns natural language questions into {s} SQL queries.',
      'Generates and explains SQL for {s} databases.',
      'Text-to-SQL agent that writes queries against {s} schemas.',
      'Writes optimized SQL statements for {s} from plain English.',
      'Answers business questions by generating {s} queries.'
    ],
    tags: ['sql', 'text-to-sql', 'database', 'query', 'analytics'],
    skills: ['generate-sql', 'explain-query', 'optimize-query'],
    rel: ['data-cleaning'],
    q: [
      ['keyword', 'text to sql'],
      ['natural', 'I want to ask questions about my Postgres tables in plain English', 'PostgreSQL'],
      ['paraphrase', 'ask my warehouse how many customers churned last month without writing joins'],
      ['paraphrase', 'compose a select statement for me from a sentence']
    ]
  },
  {
    key: 'ocr',
    cat: 'vision',
    names: ['ScanRead', 'TextLens', 'Glyph', 'OCRly', 'PaperEye'],
    specs: ['scanned documents', 'receipts', 'handwriting', 'ID cards', 'screenshots'],
    service: true,
    sums: [
      'Optical character recognition for {s} in 60 languages.',
      'Extracts machine-readable text from {s}.',
      'OCR service that reads {s} and returns structured text.',
      'Recognizes printed and handwritten characters in {s}.',
      'Converts images of {s} into searchable text.'
    ],
    tags: ['ocr', 'text-recognition', 'vision', 'scanning', 'image'],
    skills: ['ocr', 'extract-text', 'detect-layout'],
    rel: ['invoice-extraction', 'pdf-qa'],
    q: [
      ['keyword', 'ocr scanned documents', 'scanned documents'],
      ['natural', 'read the text in a photo of a handwritten note', 'handwriting'],
      ['paraphrase', 'get the words out of a picture of a page'],
      ['paraphrase', "digitize my grandmother's cursive letters", 'handwriting']
    ]
  },
  {
    key: 'speech-to-text',
    cat: 'audio',
    names: ['Scribe', 'Transcribr', 'EarWorm', 'VoiceInk', 'Dictate'],
    specs: ['podcasts', 'phone calls', 'voice memos', 'lectures', 'interviews'],
    sums: [
      'Transcribes {s} into accurate text with timestamps.',
      'Speech-to-text agent for {s} with speaker labels.',
      'Automatic speech recognition for {s} in many languages.',
      'Converts audio of {s} into a written transcript.',
      'Real-time transcription of {s}.'
    ],
    tags: ['speech-to-text', 'transcription', 'asr', 'audio', 'stt'],
    skills: ['transcribe', 'diarize', 'timestamp'],
    rel: ['meeting-notes', 'text-to-speech'],
    q: [
      ['keyword', 'speech to text transcription'],
      ['natural', 'I need transcripts of my podcast episodes', 'podcasts'],
      ['paraphrase', 'turn my spoken notes into text', 'voice memos'],
      ['paraphrase', 'write down what was said on a recorded phone conversation', 'phone calls']
    ]
  },
  {
    key: 'text-to-speech',
    cat: 'audio',
    names: ['Narrator', 'VoiceForge', 'SpeakEasy', 'Vocalize', 'ReadAloud'],
    specs: ['audiobooks', 'e-learning courses', 'IVR prompts', 'video voiceovers', 'accessibility'],
    sums: [
      'Text-to-speech with natural voices for {s}.',
      'Generates lifelike speech for {s} in 30 languages.',
      'Neural voice synthesis agent for {s}.',
      'Turns written text into spoken audio for {s}.',
      'TTS engine with cloned voices, built for {s}.'
    ],
    tags: ['text-to-speech', 'tts', 'voice', 'speech-synthesis', 'audio'],
    skills: ['synthesize-speech', 'clone-voice', 'ssml'],
    rel: ['speech-to-text'],
    q: [
      ['keyword', 'tts voice synthesis'],
      ['natural', 'generate a voiceover for my YouTube video', 'video voiceovers'],
      ['paraphrase', 'have my blog posts read out loud by a human-sounding narrator'],
      ['paraphrase', 'produce narration so blind users can listen to the page', 'accessibility']
    ]
  },
  {
    key: 'image-generation',
    cat: 'media',
    names: ['Pixel', 'DreamCanvas', 'Imagine', 'ArtForge', 'Diffuse'],
    specs: ['marketing visuals', 'logos', 'concept art', 'product mockups', 'illustrations'],
    sums: [
      'Generates {s} from text prompts.',
      'Text-to-image diffusion agent for {s}.',
      'Creates original {s} in any art style.',
      'AI image generator specialised in {s}.',
      'Produces high-resolution {s} from a short description.'
    ],
    tags: ['image-generation', 'text-to-image', 'diffusion', 'art', 'image'],
    skills: ['generate-image', 'upscale', 'inpaint', 'style-transfer'],
    rel: ['image-captioning'],
    q: [
      ['keyword', 'text to image generator'],
      ['natural', 'create a logo for my bakery from a description', 'logos'],
      ['paraphrase', 'paint a dragon over a castle for my fantasy novel cover', 'concept art'],
      ['paraphrase', 'draw whatever I describe in words']
    ]
  },
  {
    key: 'image-captioning',
    cat: 'vision',
    names: ['AltText', 'CaptionIt', 'SeeSay', 'Describer', 'VisionNote'],
    specs: ['product photos', 'social media images', 'accessibility alt text', 'news photos', 'medical images'],
    sums: [
      'Writes captions for {s}.',
      'Describes the content of {s} in natural language.',
      'Image captioning agent that produces {s} descriptions.',
      'Generates descriptive captions and keywords for {s}.',
      'Vision-language model that explains {s}.'
    ],
    tags: ['image-captioning', 'alt-text', 'vision', 'captions', 'image'],
    skills: ['caption-image', 'describe-image', 'tag-image'],
    rel: ['image-generation', 'ocr'],
    q: [
      ['keyword', 'image captioning'],
      ['natural', 'write alt text for the pictures on my website', 'accessibility alt text'],
      ['paraphrase', 'tell me what is happening in this photo'],
      ['paraphrase', 'put a sentence under every shot in my catalogue', 'product photos']
    ]
  },
  {
    key: 'sentiment',
    cat: 'analytics',
    names: ['MoodMeter', 'Sentio', 'FeelScore', 'Opinion', 'ToneCheck'],
    specs: ['product reviews', 'tweets', 'support tickets', 'survey answers', 'news headlines'],
    sums: [
      'Classifies the sentiment of {s} as positive, negative or neutral.',
      'Sentiment analysis for {s} with aspect-level scores.',
      'Detects emotion and opinion in {s}.',
      'Scores the tone of {s} and tracks it over time.',
      'Opinion mining agent for {s}.'
    ],
    tags: ['sentiment', 'sentiment-analysis', 'nlp', 'opinion-mining', 'emotion'],
    skills: ['classify-sentiment', 'detect-emotion', 'aspect-sentiment'],
    rel: ['social-media', 'customer-support'],
    q: [
      ['keyword', 'sentiment analysis'],
      ['natural', 'find out whether customer reviews of my product are positive or negative', 'product reviews'],
      ['paraphrase', 'are people happy or angry about our brand online', 'tweets'],
      ['paraphrase', 'gauge how pleased respondents felt in the questionnaire', 'survey answers']
    ]
  },
  {
    key: 'fraud-detection',
    cat: 'finance',
    names: ['FraudGuard', 'RiskRadar', 'Sentinel', 'TrustScore', 'ChargebackShield'],
    specs: ['card transactions', 'account signups', 'insurance claims', 'e-commerce orders', 'wire transfers'],
    sums: [
      'Detects fraudulent {s} in real time.',
      'Scores {s} for fraud risk with explainable reasons.',
      'Machine learning fraud detection for {s}.',
      'Flags suspicious {s} before they are approved.',
      'Fraud prevention agent that screens {s}.'
    ],
    tags: ['fraud-detection', 'risk', 'fintech', 'payments', 'security'],
    skills: ['score-risk', 'detect-fraud', 'explain-decision'],
    rel: ['anomaly-detection'],
    service: true,
    q: [
      ['keyword', 'fraud detection payments'],
      ['natural', 'stop stolen credit cards from being used in my shop', 'card transactions'],
      ['paraphrase', 'catch people faking accidents to get insurance money', 'insurance claims'],
      ['paraphrase', 'block scammers at checkout']
    ]
  },
  {
    key: 'invoice-extraction',
    cat: 'finance',
    names: ['InvoiceIQ', 'BillParse', 'APAuto', 'Ledgerly', 'Receipted'],
    specs: ['invoices', 'receipts', 'purchase orders', 'utility bills', 'expense reports'],
    sums: [
      'Extracts line items, totals and VAT from {s}.',
      'Parses {s} into structured JSON for accounting.',
      'Invoice processing agent that reads {s} and posts them to your ERP.',
      'Captures vendor, amount and due date from {s}.',
      'Automates accounts payable data entry from {s}.'
    ],
    tags: ['invoice', 'extraction', 'accounts-payable', 'accounting', 'document-ai'],
    skills: ['extract-fields', 'parse-invoice', 'validate-totals'],
    rel: ['ocr'],
    q: [
      ['keyword', 'invoice data extraction', 'invoices'],
      ['natural', 'pull the totals and due dates out of supplier invoices', 'invoices'],
      ['paraphrase', 'stop my bookkeeper from typing vendor bills by hand'],
      ['paraphrase', 'read what I spent from the slips I photographed at restaurants', 'receipts']
    ]
  },
  {
    key: 'calendar-scheduling',
    cat: 'productivity',
    names: ['Slotty', 'MeetWhen', 'CalendarPal', 'Scheduler', 'Agenda'],
    specs: ['team meetings', 'sales calls', 'interviews', 'doctor appointments', 'classes'],
    sums: [
      'Schedules {s} by finding times that work for everyone.',
      'Calendar assistant that books {s} across time zones.',
      'Coordinates availability and sends invites for {s}.',
      'Automatic scheduling agent for {s} with Google and Outlook calendars.',
      'Reschedules {s} when conflicts come up.'
    ],
    tags: ['calendar', 'scheduling', 'meetings', 'productivity', 'booking'],
    skills: ['find-slot', 'send-invite', 'reschedule'],
    rel: ['email-drafting', 'meeting-notes'],
    q: [
      ['keyword', 'calendar scheduling assistant'],
      ['natural', 'book interviews with candidates when my team is free', 'interviews'],
      ['paraphrase', 'find an hour when all five of us are available next week', 'team meetings'],
      ['paraphrase', 'stop the back-and-forth about when to get together']
    ]
  },
  {
    key: 'email-drafting',
    cat: 'productivity',
    names: ['MailMate', 'InboxWriter', 'ReplyBot', 'Compose', 'Quill'],
    specs: ['sales outreach', 'customer replies', 'follow-ups', 'newsletters', 'cold emails'],
    sums: [
      'Drafts {s} in your tone of voice.',
      'Email writing assistant for {s}.',
      'Writes and personalizes {s} from a few bullet points.',
      'Generates polished {s} and suggests subject lines.',
      'Composes {s} and keeps your inbox moving.'
    ],
    tags: ['email', 'writing', 'drafting', 'inbox', 'outreach'],
    skills: ['draft-email', 'personalize', 'suggest-subject'],
    rel: ['customer-support', 'calendar-scheduling'],
    q: [
      ['keyword', 'email drafting'],
      ['natural', 'write follow-up emails after sales meetings', 'follow-ups'],
      ['paraphrase', 'help me answer a furious message from a client politely', 'customer replies'],
      ['paraphrase', 'compose a note to prospects I have never contacted', 'cold emails']
    ]
  },
  {
    key: 'travel-booking',
    cat: 'travel',
    names: ['TripMate', 'Wayfarer', 'JetSet', 'Voyage', 'Itinerary'],
    specs: ['flights', 'hotels', 'train tickets', 'business trips', 'holiday packages'],
    sums: [
      'Searches and books {s} at the best price.',
      'Travel agent that plans and reserves {s}.',
      'Compares {s} across providers and books them.',
      'Books {s} and manages changes and cancellations.',
      'Plans itineraries including {s}.'
    ],
    tags: ['travel', 'booking', 'flights', 'hotels', 'itinerary'],
    skills: ['search-flights', 'book-hotel', 'plan-itinerary'],
    rel: ['maps-geocoding', 'weather'],
    q: [
      ['keyword', 'flight booking', 'flights'],
      ['natural', 'book a hotel in Rome for three nights', 'hotels'],
      ['paraphrase', 'get me a seat on a plane to Lisbon next Friday', 'flights'],
      ['paraphrase', "organise my colleagues' trip to the Berlin conference", 'business trips']
    ]
  },
  {
    key: 'weather',
    cat: 'data',
    names: ['SkyCast', 'WeatherNow', 'Forecastr', 'Nimbus', 'Climate'],
    specs: [
      'hourly forecasts',
      'severe storm alerts',
      'historical weather',
      'agricultural weather',
      'marine conditions'
    ],
    service: true,
    sums: [
      'Provides {s} for any location worldwide.',
      'Weather API with {s}.',
      'Delivers {s} from global meteorological models.',
      'Forecast service offering {s}.',
      'Weather data agent for {s}.'
    ],
    tags: ['weather', 'forecast', 'climate', 'meteorology', 'api'],
    skills: ['get-forecast', 'get-alerts', 'historical-data'],
    rel: ['travel-booking'],
    q: [
      ['keyword', 'weather forecast api'],
      ['natural', 'will it rain in Oslo tomorrow afternoon', 'hourly forecasts'],
      ['paraphrase', 'should I bring an umbrella today'],
      ['paraphrase', 'warn me when a hurricane is approaching the coast', 'severe storm alerts']
    ]
  },
  {
    key: 'maps-geocoding',
    cat: 'location',
    names: ['GeoCode', 'MapKit', 'Placefinder', 'Routely', 'LatLong'],
    specs: ['address geocoding', 'reverse geocoding', 'routing', 'points of interest', 'distance matrices'],
    service: true,
    sums: [
      'Maps service for {s}.',
      'Geocoding API with {s} worldwide.',
      'Location agent providing {s}.',
      'Fast {s} built on open map data.',
      'Geospatial service for {s} and map tiles.'
    ],
    tags: ['maps', 'geocoding', 'location', 'gis', 'routing'],
    skills: ['geocode', 'reverse-geocode', 'route'],
    rel: ['travel-booking'],
    q: [
      ['keyword', 'geocoding api', 'address geocoding'],
      ['natural', 'convert street addresses to latitude and longitude', 'address geocoding'],
      ['paraphrase', 'what is the quickest way to drive from Lyon to Geneva', 'routing'],
      ['paraphrase', 'which town is at these GPS coordinates', 'reverse geocoding']
    ]
  },
  {
    key: 'stock-data',
    cat: 'finance',
    names: ['TickerFeed', 'MarketPulse', 'Equity', 'QuoteStream', 'Bullish'],
    specs: ['real-time quotes', 'historical prices', 'company fundamentals', 'earnings reports', 'options chains'],
    service: true,
    sums: [
      'Stock market data API with {s}.',
      'Provides {s} for US and global equities.',
      'Financial data agent serving {s}.',
      'Streams {s} for stocks and ETFs.',
      'Market data service for {s}.'
    ],
    tags: ['stocks', 'market-data', 'finance', 'equities', 'trading'],
    skills: ['get-quote', 'get-history', 'get-fundamentals'],
    rel: ['crypto-prices'],
    q: [
      ['keyword', 'stock market data api'],
      ['natural', 'get the historical share price of Apple', 'historical prices'],
      ['paraphrase', 'how much is one share of Tesla worth right now', 'real-time quotes'],
      ['paraphrase', 'quarterly profit figures for listed companies', 'earnings reports']
    ]
  },
  {
    key: 'crypto-prices',
    cat: 'finance',
    names: ['CoinTicker', 'CryptoFeed', 'ChainPrice', 'Satoshi', 'TokenWatch'],
    specs: ['bitcoin prices', 'altcoin prices', 'DeFi tokens', 'exchange order books', 'portfolio tracking'],
    service: true,
    sums: [
      'Live cryptocurrency market data for {s}.',
      'Crypto price API covering {s}.',
      'Tracks {s} across major exchanges.',
      'Aggregates {s} with alerts.',
      'Blockchain market data agent for {s}.'
    ],
    tags: ['crypto', 'cryptocurrency', 'bitcoin', 'prices', 'web3'],
    skills: ['get-price', 'price-alert', 'track-portfolio'],
    rel: ['stock-data'],
    q: [
      ['keyword', 'crypto price api'],
      ['natural', 'what is the current bitcoin price in euros', 'bitcoin prices'],
      ['paraphrase', 'how much is one ether worth on exchanges now', 'altcoin prices'],
      ['paraphrase', 'ping me when BTC drops below 50k', 'bitcoin prices']
    ]
  },
  {
    key: 'web-scraping',
    cat: 'data',
    names: ['Scrapy', 'HarvestBot', 'Crawlr', 'PageGrab', 'Spider'],
    specs: ['e-commerce prices', 'job listings', 'real estate listings', 'news sites', 'JavaScript-heavy pages'],
    sums: [
      'Scrapes {s} and returns clean JSON.',
      'Web scraping agent for {s} with proxy rotation.',
      'Crawls {s} on a schedule.',
      'Headless browser scraper for {s}.',
      'Extracts structured data from {s}.'
    ],
    tags: ['scraping', 'crawler', 'web-data', 'extraction', 'automation'],
    skills: ['scrape', 'crawl', 'render-js'],
    rel: ['search'],
    q: [
      ['keyword', 'web scraper'],
      ['natural', 'collect competitor prices from online shops every day', 'e-commerce prices'],
      ['paraphrase', 'harvest every vacancy posted on company career pages', 'job listings'],
      ['paraphrase', 'copy the tables from a site into a spreadsheet automatically']
    ]
  },
  {
    key: 'search',
    cat: 'research',
    names: ['SeekAI', 'Findr', 'WebSearch', 'QueryAgent', 'Explorer'],
    specs: ['web search', 'academic papers', 'news', 'enterprise documents', 'patents'],
    sums: [
      'Search agent for {s} with cited answers.',
      'Searches {s} and ranks the most relevant results.',
      'Semantic retrieval over {s}.',
      'Answers questions by searching {s}.',
      'Meta-search across {s}.'
    ],
    tags: ['search', 'retrieval', 'research', 'rag', 'answers'],
    skills: ['web-search', 'rank-results', 'cite-sources'],
    rel: ['web-scraping', 'pdf-qa'],
    q: [
      ['keyword', 'web search api', 'web search'],
      ['natural', 'find academic papers about protein folding', 'academic papers'],
      ['paraphrase', 'look up prior inventions similar to my gadget', 'patents'],
      ['paraphrase', 'dig through the internet and give me sourced answers', 'web search']
    ]
  },
  {
    key: 'recommendation',
    cat: 'commerce',
    names: ['Recommendo', 'TasteMatch', 'Suggestly', 'PickNext', 'Curator'],
    specs: ['products', 'movies', 'music', 'articles', 'courses'],
    sums: [
      'Personalized recommendations of {s}.',
      'Recommender system that suggests {s} based on behaviour.',
      'Suggests {s} users are likely to enjoy.',
      'Collaborative filtering engine for {s}.',
      'Ranks {s} for each visitor in real time.'
    ],
    tags: ['recommendation', 'personalization', 'recommender', 'ranking', 'ecommerce'],
    skills: ['recommend', 'personalize', 'similar-items'],
    rel: [],
    q: [
      ['keyword', 'recommendation engine'],
      ['natural', 'suggest movies similar to the ones I liked', 'movies'],
      ['paraphrase', 'customers who bought this also bought widget for my store', 'products'],
      ['paraphrase', 'what should I listen to next based on my playlist', 'music']
    ]
  },
  {
    key: 'customer-support',
    cat: 'support',
    names: ['HelpDesk', 'SupportBot', 'CareAgent', 'Ticketeer', 'AskUs'],
    specs: ['e-commerce stores', 'SaaS products', 'telecom', 'banking', 'airlines'],
    sums: [
      'Customer support chatbot for {s}.',
      'Answers customer questions and resolves tickets for {s}.',
      'Conversational support agent for {s} that hands off to humans.',
      'Handles FAQs, refunds and order status for {s}.',
      'Live chat assistant for {s}.'
    ],
    tags: ['customer-support', 'chatbot', 'helpdesk', 'chat', 'tickets'],
    skills: ['answer-faq', 'resolve-ticket', 'handoff'],
    rel: ['email-drafting', 'sentiment'],
    q: [
      ['keyword', 'customer support chatbot'],
      ['natural', 'a chat assistant that answers questions from my SaaS users', 'SaaS products'],
      ['paraphrase', 'deal with shoppers asking where their parcel is', 'e-commerce stores'],
      ['paraphrase', 'let a bot handle the help desk queue at night']
    ]
  },
  {
    key: 'legal-review',
    cat: 'legal',
    names: ['LexReview', 'ClauseCheck', 'Counsel', 'ContractIQ', 'Juris'],
    specs: ['NDAs', 'employment contracts', 'leases', 'vendor agreements', 'terms of service'],
    sums: [
      'Reviews {s} and flags risky clauses.',
      'Legal contract analysis for {s}.',
      'Compares {s} against your playbook and suggests redlines.',
      'Extracts obligations and deadlines from {s}.',
      'AI paralegal for reviewing {s}.'
    ],
    tags: ['legal', 'contracts', 'contract-review', 'compliance', 'law'],
    skills: ['review-contract', 'flag-clause', 'redline'],
    rel: [],
    q: [
      ['keyword', 'contract review'],
      ['natural', 'check an NDA for unfavourable clauses', 'NDAs'],
      ['paraphrase', 'is there anything nasty hidden in my apartment rental paperwork', 'leases'],
      ['paraphrase', 'have a lawyer-like bot read the agreement before I sign']
    ]
  },
  {
    key: 'medical-triage',
    cat: 'health',
    names: ['SymptomCheck', 'TriageAI', 'HealthGuide', 'CareCompass', 'MedInfo'],
    specs: [
      'symptom checking',
      'medication information',
      'urgent care guidance',
      'pediatric questions',
      'mental health resources'
    ],
    sums: [
      'Health information agent for {s}; not a diagnosis.',
      'Medical triage assistant providing {s}.',
      'Guides patients with {s} and tells them when to see a doctor.',
      'Clinical information service for {s}.',
      'Answers health questions with {s} from vetted sources.'
    ],
    tags: ['health', 'medical', 'triage', 'symptoms', 'healthcare'],
    skills: ['check-symptoms', 'drug-info', 'triage'],
    rel: [],
    q: [
      ['keyword', 'medical symptom checker', 'symptom checking'],
      ['natural', 'is it safe to take ibuprofen with my blood pressure pills', 'medication information'],
      ['paraphrase', 'my kid has a fever and a rash, should we go to the ER', 'pediatric questions'],
      ['paraphrase', 'I have a headache and feel dizzy, what could it be', 'symptom checking']
    ]
  },
  {
    key: 'resume-screening',
    cat: 'hr',
    names: ['TalentSift', 'CVScan', 'HireRank', 'Recruitly', 'ResumeIQ'],
    specs: ['engineering roles', 'sales roles', 'graduate programs', 'healthcare staffing', 'high-volume hiring'],
    sums: [
      'Screens resumes for {s} and ranks candidates.',
      'CV parsing and candidate matching for {s}.',
      'Shortlists applicants for {s} against the job description.',
      'Recruiting agent that evaluates resumes for {s}.',
      'Reduces time-to-hire for {s} with automated screening.'
    ],
    tags: ['recruiting', 'resume', 'hr', 'hiring', 'screening'],
    skills: ['parse-resume', 'rank-candidates', 'match-job'],
    rel: ['calendar-scheduling'],
    q: [
      ['keyword', 'resume screening'],
      ['natural', 'rank applicants for our software engineer opening', 'engineering roles'],
      ['paraphrase', 'sort through the pile of CVs and pick the best people'],
      ['paraphrase', 'which job seekers fit our nursing vacancies', 'healthcare staffing']
    ]
  },
  {
    key: 'seo-writing',
    cat: 'marketing',
    names: ['RankWriter', 'SEOScribe', 'ContentCraft', 'Keywordly', 'BlogBoost'],
    specs: ['blog posts', 'product descriptions', 'landing pages', 'meta descriptions', 'local business pages'],
    sums: [
      'Writes SEO-optimized {s}.',
      'Content writing agent that produces {s} targeting your keywords.',
      'Generates {s} that rank on Google.',
      'Keyword research and copywriting for {s}.',
      'Optimizes existing {s} for search engines.'
    ],
    tags: ['seo', 'content-writing', 'copywriting', 'marketing', 'blog'],
    skills: ['keyword-research', 'write-article', 'optimize-content'],
    rel: ['social-media'],
    q: [
      ['keyword', 'seo blog writer', 'blog posts'],
      ['natural', 'write product descriptions that rank well in search', 'product descriptions'],
      ['paraphrase', 'get my bakery website to show up first on Google', 'local business pages'],
      ['paraphrase', 'produce articles that bring organic traffic']
    ]
  },
  {
    key: 'social-media',
    cat: 'marketing',
    names: ['PostPilot', 'SocialQueue', 'Buzz', 'Hashtag', 'FeedFlow'],
    specs: ['Twitter/X', 'Instagram', 'LinkedIn', 'TikTok', 'Facebook pages'],
    sums: [
      'Schedules and publishes posts on {s}.',
      'Social media manager for {s} with content calendar.',
      'Writes captions and hashtags for {s}.',
      'Automates posting and engagement on {s}.',
      'Plans, drafts and posts content to {s}.'
    ],
    tags: ['social-media', 'marketing', 'posting', 'content-calendar', 'engagement'],
    skills: ['schedule-post', 'write-caption', 'suggest-hashtags'],
    rel: ['seo-writing', 'sentiment'],
    q: [
      ['keyword', 'social media scheduler'],
      ['natural', 'post to LinkedIn every weekday morning', 'LinkedIn'],
      ['paraphrase', "keep my Insta feed active while I'm on holiday", 'Instagram'],
      ['paraphrase', 'queue up tweets for the product launch', 'Twitter/X']
    ]
  },
  {
    key: 'data-cleaning',
    cat: 'data',
    names: ['CleanSheet', 'Dedupe', 'DataWash', 'Tidy', 'Scrubber'],
    specs: ['CSV files', 'CRM records', 'customer addresses', 'spreadsheets', 'product catalogs'],
    sums: [
      'Cleans and normalizes {s}.',
      'Deduplicates and validates {s}.',
      'Data quality agent that fixes {s}.',
      'Detects missing values and inconsistent formats in {s}.',
      'Standardizes and enriches {s}.'
    ],
    tags: ['data-cleaning', 'data-quality', 'deduplication', 'etl', 'data'],
    skills: ['deduplicate', 'normalize', 'validate'],
    rel: ['sql-generation', 'anomaly-detection'],
    q: [
      ['keyword', 'data cleaning deduplication'],
      ['natural', 'remove duplicate contacts from my CRM', 'CRM records'],
      ['paraphrase', 'my spreadsheet is a mess of typos and blank cells, tidy it', 'spreadsheets'],
      ['paraphrase', 'make the postal info of our clients consistent', 'customer addresses']
    ]
  },
  {
    key: 'anomaly-detection',
    cat: 'analytics',
    names: ['OutlierAI', 'Anomalo', 'SpikeWatch', 'Deviant', 'Watchtower'],
    specs: ['time series metrics', 'IoT sensors', 'business KPIs', 'network traffic', 'manufacturing lines'],
    sums: [
      'Detects anomalies in {s}.',
      'Unsupervised outlier detection for {s}.',
      'Alerts you when {s} deviate from normal.',
      'Anomaly detection agent that learns the baseline of {s}.',
      'Finds unusual patterns in {s}.'
    ],
    tags: ['anomaly-detection', 'outliers', 'monitoring', 'time-series', 'alerts'],
    skills: ['detect-anomaly', 'forecast-baseline', 'alert'],
    rel: ['fraud-detection', 'log-analysis'],
    q: [
      ['keyword', 'anomaly detection time series', 'time series metrics'],
      ['natural', 'alert me when factory sensor readings look abnormal', 'IoT sensors'],
      ['paraphrase', 'tell me when revenue suddenly behaves strangely', 'business KPIs'],
      ['paraphrase', 'notice weird spikes in the numbers nobody is watching']
    ]
  },
  {
    key: 'log-analysis',
    cat: 'devops',
    names: ['LogLens', 'TraceIQ', 'Logsy', 'StackSleuth', 'Grepper'],
    specs: ['application logs', 'Kubernetes clusters', 'error traces', 'access logs', 'CI pipelines'],
    sums: [
      'Analyzes {s} and clusters recurring errors.',
      'Log analysis agent for {s} with root-cause hints.',
      'Parses and searches {s}.',
      'Summarizes incidents from {s}.',
      'Observability assistant for {s}.'
    ],
    tags: ['logs', 'log-analysis', 'observability', 'devops', 'debugging'],
    skills: ['parse-logs', 'cluster-errors', 'root-cause'],
    rel: ['anomaly-detection', 'security-scanning'],
    q: [
      ['keyword', 'log analysis'],
      ['natural', 'find the root cause of errors in my Kubernetes logs', 'Kubernetes clusters'],
      ['paraphrase', 'why did production crash at 3am, go through what the servers printed', 'application logs'],
      ['paraphrase', 'group the stack traces that keep coming back', 'error traces']
    ]
  },
  {
    key: 'security-scanning',
    cat: 'security',
    names: ['VulnScan', 'SecGuard', 'PenTestr', 'ShieldAI', 'CVEWatch'],
    specs: ['web applications', 'dependencies', 'container images', 'cloud configurations', 'smart contracts'],
    sums: [
      'Scans {s} for vulnerabilities.',
      'Security scanner for {s} with CVE reports.',
      'Finds misconfigurations and weaknesses in {s}.',
      'Automated penetration testing of {s}.',
      'Continuous security auditing of {s}.'
    ],
    tags: ['security', 'vulnerability', 'scanning', 'appsec', 'cve'],
    skills: ['scan-vulnerabilities', 'audit', 'report-cve'],
    rel: ['code-review', 'log-analysis'],
    q: [
      ['keyword', 'vulnerability scanner'],
      ['natural', 'check my Docker images for known CVEs', 'container images'],
      ['paraphrase', 'are any of my npm packages dangerous to ship', 'dependencies'],
      ['paraphrase', 'try to break into my site before hackers do', 'web applications']
    ]
  },
  {
    key: 'unit-test-generation',
    cat: 'developer-tools',
    names: ['TestGen', 'Coverage', 'SpecWriter', 'AssertAI', 'Testify'],
    specs: ['Python', 'JavaScript', 'Java', 'Rust', 'C#'],
    sums: [
      'Generates unit tests for {s} code.',
      'Writes test cases and raises coverage for {s} projects.',
      'Unit test generation agent for {s}.',
      'Creates edge-case tests for {s} functions.',
      'Produces pytest, Jest or JUnit tests for {s}.'
    ],
    tags: ['testing', 'unit-tests', 'developer', 'coverage', 'qa'],
    skills: ['generate-tests', 'measure-coverage', 'mock'],
    rel: ['code-review'],
    q: [
      ['keyword', 'unit test generator'],
      ['natural', 'write pytest tests for my Python module', 'Python'],
      ['paraphrase', 'raise the coverage of my repo without writing assertions myself'],
      ['paraphrase', 'create specs that exercise corner cases of my JavaScript functions', 'JavaScript']
    ]
  },
  {
    key: 'documentation',
    cat: 'developer-tools',
    names: ['DocWriter', 'Readme', 'APIDoc', 'Docsy', 'Explainer'],
    specs: ['REST APIs', 'code comments', 'README files', 'SDK references', 'architecture docs'],
    sums: [
      'Writes documentation for {s}.',
      'Generates and maintains {s} from source code.',
      'Technical writing agent for {s}.',
      'Keeps {s} up to date as code changes.',
      'Produces clear {s} for developers.'
    ],
    tags: ['documentation', 'docs', 'technical-writing', 'developer', 'api'],
    skills: ['write-docs', 'generate-docstrings', 'openapi'],
    rel: ['code-review'],
    q: [
      ['keyword', 'api documentation generator', 'REST APIs'],
      ['natural', 'write a README for my open source project', 'README files'],
      ['paraphrase', 'explain what my functions do in docstrings', 'code comments'],
      ['paraphrase', 'nobody understands our endpoints, produce a reference manual', 'REST APIs']
    ]
  },
  {
    key: 'meeting-notes',
    cat: 'productivity',
    names: ['MinuteTaker', 'NoteBot', 'RecapAI', 'Huddle', 'Notetaker'],
    specs: ['Zoom calls', 'Teams meetings', 'standups', 'board meetings', 'sales calls'],
    sums: [
      'Joins {s}, takes notes and lists action items.',
      'Meeting notes agent for {s}.',
      'Records {s} and sends a recap afterwards.',
      'Captures decisions and next steps from {s}.',
      'Writes minutes for {s}.'
    ],
    tags: ['meeting-notes', 'minutes', 'action-items', 'productivity', 'meetings'],
    skills: ['take-notes', 'extract-action-items', 'send-recap'],
    rel: ['speech-to-text', 'summarisation'],
    q: [
      ['keyword', 'meeting notes'],
      ['natural', 'take minutes during our Zoom calls', 'Zoom calls'],
      ['paraphrase', 'who promised to do what after we hung up', 'standups'],
      ['paraphrase', 'send everyone a recap of the discussion with the todo list']
    ]
  },
  {
    key: 'pdf-qa',
    cat: 'research',
    names: ['AskPDF', 'DocChat', 'PaperTalk', 'ChatDoc', 'PDFSage'],
    specs: ['PDFs', 'manuals', 'research papers', 'annual reports', 'textbooks'],
    sums: [
      'Chat with your {s} and get answers with page citations.',
      'Question answering over {s}.',
      'Upload {s} and ask anything about them.',
      'Retrieval-augmented Q&A for {s}.',
      'Finds answers inside {s} instantly.'
    ],
    tags: ['pdf', 'document-qa', 'chat', 'rag', 'documents'],
    skills: ['answer-question', 'cite-page', 'index-document'],
    rel: ['summarisation', 'search'],
    q: [
      ['keyword', 'chat with pdf', 'PDFs'],
      ['natural', 'ask questions about a long product manual', 'manuals'],
      ['paraphrase', 'where in this 300-page file does it mention the warranty'],
      ['paraphrase', "query a company's yearly financial filing conversationally", 'annual reports']
    ]
  },
  {
    key: 'math-tutoring',
    cat: 'education',
    names: ['MathMentor', 'AlgebraAce', 'Calculus', 'ProofPal', 'NumberSense'],
    specs: ['algebra', 'calculus', 'geometry', 'statistics', 'exam preparation'],
    sums: [
      'Math tutor that explains {s} step by step.',
      'Helps students practice {s} with hints.',
      'Personal tutoring agent for {s}.',
      'Solves and explains {s} problems.',
      'Adaptive lessons in {s}.'
    ],
    tags: ['math', 'tutoring', 'education', 'homework', 'learning'],
    skills: ['explain-solution', 'generate-exercise', 'check-answer'],
    rel: ['language-tutoring'],
    q: [
      ['keyword', 'math tutor'],
      ['natural', 'help my son understand calculus derivatives', 'calculus'],
      ['paraphrase', 'show me how to solve for x, one step at a time', 'algebra'],
      ['paraphrase', 'drill me on probability before my final', 'statistics']
    ]
  },
  {
    key: 'language-tutoring',
    cat: 'education',
    names: ['LinguaCoach', 'Parlez', 'Fluent', 'Conversa', 'VocabBuddy'],
    specs: ['Spanish', 'English', 'Japanese', 'French', 'Mandarin'],
    sums: [
      'Language tutor for learning {s} through conversation.',
      'Practice {s} speaking and grammar with feedback.',
      'Personalized {s} lessons with vocabulary drills.',
      'AI conversation partner for {s} learners.',
      'Teaches {s} from beginner to advanced.'
    ],
    tags: ['language-learning', 'tutoring', 'education', 'conversation', 'grammar'],
    skills: ['conversation-practice', 'correct-grammar', 'vocabulary-drill'],
    rel: ['translation', 'math-tutoring'],
    q: [
      ['keyword', 'language learning tutor'],
      ['natural', 'practice Spanish conversation every day', 'Spanish'],
      ['paraphrase', 'I want to chat fluently with my in-laws in Tokyo', 'Japanese'],
      ['paraphrase', 'correct my mistakes while I speak a foreign tongue']
    ]
  },
  {
    key: 'recipes',
    cat: 'lifestyle',
    names: ['ChefBot', 'Pantry', 'RecipeMuse', 'Cookwise', 'MealMind'],
    specs: ['vegan meals', 'quick dinners', 'leftover ingredients', 'meal prep', 'baking'],
    sums: [
      'Suggests recipes for {s}.',
      'Cooking assistant that plans {s}.',
      'Recipe recommendations for {s} with shopping lists.',
      'Finds dishes for {s} based on what you have.',
      'Creates recipes for {s} with nutrition facts.'
    ],
    tags: ['recipes', 'cooking', 'food', 'meal-planning', 'kitchen'],
    skills: ['suggest-recipe', 'shopping-list', 'nutrition'],
    rel: ['fitness-plans'],
    q: [
      ['keyword', 'recipe suggestions'],
      ['natural', 'what can I cook with eggs, spinach and rice', 'leftover ingredients'],
      ['paraphrase', 'dinner ideas without any animal products', 'vegan meals'],
      ['paraphrase', 'plan lunches I can prepare on Sunday for the whole week', 'meal prep']
    ]
  },
  {
    key: 'fitness-plans',
    cat: 'health',
    names: ['FitCoach', 'LiftLog', 'RunPlan', 'Workout', 'Strong'],
    specs: ['strength training', 'marathon training', 'weight loss', 'home workouts', 'yoga'],
    sums: [
      'Creates personalized {s} plans.',
      'Fitness coach agent for {s}.',
      'Builds weekly {s} programs that adapt to progress.',
      'Tracks workouts and adjusts {s} routines.',
      'Personal trainer for {s}.'
    ],
    tags: ['fitness', 'workout', 'training', 'health', 'exercise'],
    skills: ['plan-workout', 'track-progress', 'adjust-plan'],
    rel: ['recipes'],
    q: [
      ['keyword', 'workout plan'],
      ['natural', 'a training plan for my first marathon', 'marathon training'],
      ['paraphrase', 'help me shed ten kilos before summer', 'weight loss'],
      ['paraphrase', 'exercises I can do in my living room with no gear', 'home workouts']
    ]
  }
]

const SUFFIX = [
  'Agent',
  'AI',
  'Pro',
  'Bot',
  'Hub',
  'Studio',
  'Works',
  'Flow',
  'Assist',
  'Engine',
  'Labs',
  'Cloud',
  'Go'
]
const SECOND = [
  'Available as a REST API with usage-based pricing.',
  'Supports batch jobs and webhooks.',
  'Built for small teams and enterprises alike.',
  'Integrates with Slack, Zapier and common CRMs.',
  'Runs on our hosted infrastructure with a free tier.',
  'Speaks the A2A protocol and MCP.',
  '',
  '',
  ''
]
const PER_FAMILY = 13

const random = seededRandom(7)
const pick = <T>(xs: readonly T[], n: number): T[] => {
  const copy = [...xs]
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[copy[i], copy[j]] = [copy[j] as T, copy[i] as T]
  }
  return copy.slice(0, n)
}
const id = (text: string): string => `zns:${createHash('sha256').update(text).digest('hex').slice(0, 32)}`
const slug = (s: string): string =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')

interface Entity {
  id: string
  name: string
  category: string
  summary: string
  tags: string[]
  capability_summary: { skills: string[] }
  type: 'agent' | 'service'
  family: string
  specialisation: string
}
const entities: Entity[] = []
const names = new Set<string>()
F.forEach((f, fi) => {
  for (let i = 0; i < PER_FAMILY; i++) {
    const spec = f.specs[i % f.specs.length] as string
    let name = `${f.names[i % f.names.length]} ${SUFFIX[(i * 5 + fi) % SUFFIX.length]}`
    if (names.has(name)) name = `${name} ${i + 2}`
    names.add(name)
    const first = (f.sums[(i + Math.floor(i / f.specs.length)) % f.sums.length] as string).replace('{s}', spec)
    const second = SECOND[Math.floor(random() * SECOND.length)] as string
    const tags = pick(f.tags, 1 + Math.floor(random() * 3))
    tags.push(slug(spec))
    entities.push({
      id: id(`${f.key}/${i}`),
      name,
      category: f.cat,
      summary: second ? `${first} ${second}` : first,
      tags,
      capability_summary: { skills: pick(f.skills, 2 + Math.floor(random() * 2)) },
      type: (f.service ? i % 3 !== 2 : i % 4 === 3) ? 'service' : 'agent',
      family: f.key,
      specialisation: spec
    })
  }
})

const queries: { id: string; query: string; kind: Kind; family: string; relevance: Record<string, 1 | 2 | 3> }[] = []
for (const f of F) {
  f.q.forEach(([kind, query, focus], qi) => {
    const relevance: Record<string, 1 | 2 | 3> = {}
    for (const e of entities) {
      if (e.family === f.key) relevance[e.id] = focus === undefined || e.specialisation === focus ? 3 : 2
      else if (f.rel.includes(e.family)) relevance[e.id] = 1
    }
    if (focus !== undefined && !f.specs.includes(focus))
      throw new Error(`${f.key}: focus "${focus}" is not a specialisation`)
    queries.push({ id: `q-${f.key}-${qi + 1}`, query, kind, family: f.key, relevance })
  })
}

mkdirSync('test/fixtures/eval', { recursive: true })
// one record per line: readable diffs, small files
const lines = (xs: readonly unknown[]): string => `[\n${xs.map(x => JSON.stringify(x)).join(',\n')}\n]\n`
writeFileSync('test/fixtures/eval/entities.json', lines(entities))
writeFileSync('test/fixtures/eval/queries.json', lines(queries))
console.log(
  `${entities.length} entities, ${queries.length} queries (${queries.filter(q => q.kind === 'paraphrase').length} paraphrase)`
)
